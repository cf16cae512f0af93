// The tenant a request to the memory node acts for: the ONE place the node
// decides it.  Every handler that touches tenant memory (alloc, free, the
// one-sided keys, locks, roots, sessions, the extensions' calls such as the
// RPC baselines') asks here and checks ownership against the answer.
//
// The answer comes from what the connection proved in its handshake
// (node::TenantOf, src/node/node_tenant.h): a tenant client acts for its own
// tenant only, and a claim of any other is refused with PermissionDenied; a
// cluster peer (a node, the switch, an administrator's tool) acts for the
// tenant the request names.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pulse/memory.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::memnode {

// The tenant of control request `body` (op `op`) from connection `from`.
// InvalidArgument naming the field if "tenant" is missing or malformed;
// PermissionDenied if the connection may not act for it.
Result<TenantId> RequestTenant(const net::Worker& worker, net::EndpointId from, const nlohmann::json& body,
                               std::string_view op);
// The same for a binary request that claims `claimed`.
Result<TenantId> RequestTenant(const net::Worker& worker, net::EndpointId from, TenantId claimed, std::string_view op);

// Who sent a traversal message, and as which tenant it runs.
struct TraversalSender {
  TenantId tenant = 0;
  // The connection proved the cluster secret (the switch, a peer memory
  // node) or has no credentials at all (a cluster without a secret): it may
  // carry any tenant and send what only nodes send (redirects).
  bool cluster_peer = false;
};
// A traversal message that came on `from` claiming `carried`: a cluster
// peer's carried tenant is taken (the switch, or the memory node that
// continues a traversal, took it from the client's proven connection); any
// other connection runs as the tenant it proved, whatever it claims.
// Errors: NotFound for an unknown endpoint (node::TenantOf).
Result<TraversalSender> TraversalSenderOf(const net::Worker& worker, net::EndpointId from, TenantId carried);

// How a hosted service (memnode/extension.h) checks a request's claimed
// tenant: OK, or the refusal to answer with.
using TenantCheck = std::function<Status(TenantId claimed)>;

}  // namespace pulse::memnode
