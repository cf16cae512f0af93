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

// How a hosted service (memnode/extension.h) checks a request's claimed
// tenant: OK, or the refusal to answer with.
using TenantCheck = std::function<Status(TenantId claimed)>;

}  // namespace pulse::memnode
