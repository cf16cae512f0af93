#include "memnode/request_tenant.h"

#include <fmt/format.h>

#include "node/node_tenant.h"

namespace pulse::memnode {

Result<TenantId> RequestTenant(const net::Worker& worker, net::EndpointId from, const nlohmann::json& body,
                               std::string_view op) {
  return node::RequestTenant(worker, from, body, op);
}

Result<TenantId> RequestTenant(const net::Worker& worker, net::EndpointId from, TenantId claimed,
                               std::string_view op) {
  PULSE_ASSIGN_OR_RETURN(node::ConnectionTenant peer, node::TenantOf(worker, from));
  if (peer.any || peer.tenant == claimed) return claimed;
  return Status::PermissionDenied(
      fmt::format("{}: the connection is tenant {}'s, the request claims tenant {}", op, peer.tenant, claimed));
}

Result<TraversalSender> TraversalSenderOf(const net::Worker& worker, net::EndpointId from, TenantId carried) {
  PULSE_ASSIGN_OR_RETURN(node::ConnectionTenant peer, node::TenantOf(worker, from));
  if (peer.any) return TraversalSender{carried, true};
  return TraversalSender{peer.tenant, false};
}

}  // namespace pulse::memnode
