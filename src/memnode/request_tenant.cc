#include "memnode/request_tenant.h"

#include "node/node_control.h"

namespace pulse::memnode {

Result<TenantId> RequestTenant(net::EndpointId from, const nlohmann::json& body, std::string_view op) {
  PULSE_ASSIGN_OR_RETURN(uint32_t claimed, node::GetU32(body, "tenant", op));
  return RequestTenant(from, claimed, op);
}

Result<TenantId> RequestTenant(net::EndpointId /*from*/, TenantId claimed, std::string_view /*op*/) {
  // Until connections are authenticated: the claim.
  return claimed;
}

}  // namespace pulse::memnode
