// Who a node's connection acts for: the one accessor every request path of
// the switch and the memory nodes uses to learn a request's tenant, from
// what the peer proved in the connection's handshake (net::Worker::PeerOf,
// docs/security.md), never from what a request claims.
//
//   - A tenant peer (a client holding one tenant's credential) acts for that
//     tenant only.
//   - A cluster peer (a node, the switch forwarding a client's traversal, an
//     administrator's tool holding the cluster secret) is trusted to act for
//     the tenant a request names.
//   - An open peer exists only on a node started without a cluster secret
//     (tests inside one process); it is treated like a cluster peer.
//
// Thread-compatible: called on the node's worker thread.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "pulse/memory.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::node {

struct ConnectionTenant {
  bool any = false;       // a cluster or open peer: may act for any tenant
  TenantId tenant = 0;    // the proven tenant when !any
};

// What the peer of `ep` may act for.  Errors: NotFound (unknown endpoint).
Result<ConnectionTenant> TenantOf(const net::Worker& worker, net::EndpointId ep);

// The tenant request `op` from `ep` acts for: for a tenant peer its own
// tenant (a "tenant" field in `body`, if present, must name it, else
// PermissionDenied naming both); for a cluster peer the request's "tenant"
// field (InvalidArgument if missing or not a u32, as node::GetU32).
Result<TenantId> RequestTenant(const net::Worker& worker, net::EndpointId ep, const nlohmann::json& body,
                               std::string_view op);

// The tenant a binary request from `ep` that claims `claimed` acts for:
// `claimed` if the peer is a cluster (or open) peer or that tenant's own
// connection; PermissionDenied naming `op` and both tenants otherwise.
// (A switch or node forwarding for a client is a cluster peer: it must put
// the tenant it proved for the client in the request, never a claim.)
Result<TenantId> CheckTenantClaim(const net::Worker& worker, net::EndpointId ep, TenantId claimed,
                                  std::string_view op);

// Who sent a traversal message, and as which tenant it runs.
struct TraversalSender {
  TenantId tenant = 0;
  // The connection proved the cluster secret (the switch, a peer memory
  // node; or it is an open peer): it may carry any tenant and send what only
  // nodes send (redirects).
  bool cluster_peer = false;
};
// A traversal message that came on `ep` carrying `carried`: a cluster peer's
// carried tenant is taken (the switch, or the memory node continuing a
// traversal, took it from the client's proven connection); any other
// connection runs as the tenant it proved, whatever it claims.
// Errors: NotFound for an unknown endpoint.
Result<TraversalSender> TraversalSenderOf(const net::Worker& worker, net::EndpointId ep, TenantId carried);

// OK if the peer of `ep` is a cluster (or open) peer; PermissionDenied
// naming `op` for a tenant peer (administrative operations: register a
// memory node, shut a node down).
Status RequireClusterPeer(const net::Worker& worker, net::EndpointId ep, std::string_view op);

}  // namespace pulse::node
