#include "client/locks.h"

#include <fmt/format.h>

namespace pulse {

using nlohmann::json;

Result<json> LockCalls::Call(uint64_t addr, json request) {
  request["addr"] = addr;
  request["tenant"] = connections_->options.tenant;
  // A lock lives at the node holding its address's page; a page on the
  // move is followed (a page with a held lock does not move).
  return connections_->FollowingPages(addr, [&]() -> Result<json> {
    MemNode* n = connections_->NodeFor(addr);
    if (n == nullptr)
      return Status::InvalidArgument(fmt::format("lock: far address {:#x} is outside every memory node", addr));
    if (n->ep == net::kInvalidEndpoint)
      return Status::Unavailable(fmt::format("lock: memory node {} owning {:#x} is down", n->id, addr));
    return connections_->control->Call(n->ep, request, connections_->rma_timeout());
  });
}

Result<bool> LockCalls::TryLock(uint64_t lock_addr, uint64_t holder, bool exclusive, std::chrono::milliseconds lease) {
  json request{{"op", "lock"}, {"holder", holder}, {"mode", exclusive ? "exclusive" : "shared"}, {"lease_ms", lease.count()}};
  PULSE_ASSIGN_OR_RETURN(json r, Call(lock_addr, std::move(request)));
  auto granted = r.find("granted");
  if (granted == r.end() || !granted->is_boolean())
    return Status::Internal(fmt::format("lock {:#x}: the memory node's answer has no \"granted\"", lock_addr));
  return granted->get<bool>();
}

// A hold that is gone arrives as FailedPrecondition, with the node's code.
Status LockCalls::Renew(uint64_t lock_addr, uint64_t holder, std::chrono::milliseconds lease) {
  return Call(lock_addr, json{{"op", "lock_renew"}, {"holder", holder}, {"lease_ms", lease.count()}}).status();
}

Status LockCalls::Unlock(uint64_t lock_addr, uint64_t holder) {
  return Call(lock_addr, json{{"op", "unlock"}, {"holder", holder}}).status();
}

}  // namespace pulse
