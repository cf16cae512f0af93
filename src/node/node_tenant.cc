#include "node/node_tenant.h"

#include <fmt/format.h>

#include "node/node_control.h"

namespace pulse::node {

Result<ConnectionTenant> TenantOf(const net::Worker& worker, net::EndpointId ep) {
  PULSE_ASSIGN_OR_RETURN(net::PeerIdentity peer, worker.PeerOf(ep));
  if (peer.kind == net::PeerKind::kTenant) return ConnectionTenant{false, peer.tenant};
  return ConnectionTenant{true, 0};
}

Result<TenantId> RequestTenant(const net::Worker& worker, net::EndpointId ep, const nlohmann::json& body,
                               std::string_view op) {
  PULSE_ASSIGN_OR_RETURN(ConnectionTenant who, TenantOf(worker, ep));
  if (who.any) return GetU32(body, "tenant", op);
  if (body.contains("tenant")) {
    Result<uint32_t> claimed = GetU32(body, "tenant", op);
    if (!claimed.ok() || *claimed != who.tenant) {
      return Status::PermissionDenied(fmt::format("{}: this connection is tenant {} and may not act for tenant {}", op,
                                                  who.tenant, body["tenant"].dump()));
    }
  }
  return who.tenant;
}

Result<TenantId> CheckTenantClaim(const net::Worker& worker, net::EndpointId ep, TenantId claimed,
                                  std::string_view op) {
  PULSE_ASSIGN_OR_RETURN(ConnectionTenant who, TenantOf(worker, ep));
  if (who.any || who.tenant == claimed) return claimed;
  return Status::PermissionDenied(
      fmt::format("{}: the connection is tenant {}'s, the request claims tenant {}", op, who.tenant, claimed));
}

Status RequireClusterPeer(const net::Worker& worker, net::EndpointId ep, std::string_view op) {
  PULSE_ASSIGN_OR_RETURN(ConnectionTenant who, TenantOf(worker, ep));
  if (who.any) return Status::Ok();
  return Status::PermissionDenied(
      fmt::format("{}: tenant {}'s connection may not do this; it needs the cluster secret", op, who.tenant));
}

Result<TraversalSender> TraversalSenderOf(const net::Worker& worker, net::EndpointId ep, TenantId carried) {
  PULSE_ASSIGN_OR_RETURN(ConnectionTenant peer, TenantOf(worker, ep));
  if (peer.any) return TraversalSender{carried, true};
  return TraversalSender{peer.tenant, false};
}

}  // namespace pulse::node
