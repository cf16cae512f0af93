// The client side of the memory nodes' lock service (pulse::ds::FarLock
// uses it through Client::TryLock / RenewLock / Unlock): one control call
// to the memory node owning the lock's address; the node's error codes
// arrive as they are (FailedPrecondition: no lease held).
//
// Thread-safety: none; it belongs to its Client's thread.
#pragma once

#include <chrono>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "client/connections.h"

namespace pulse {

class LockCalls {
 public:
  explicit LockCalls(Connections* connections) : connections_(connections) {}

  // As Client::TryLock, RenewLock and Unlock.
  Result<bool> TryLock(uint64_t lock_addr, uint64_t holder, bool exclusive, std::chrono::milliseconds lease);
  Status Renew(uint64_t lock_addr, uint64_t holder, std::chrono::milliseconds lease);
  Status Unlock(uint64_t lock_addr, uint64_t holder);

 private:
  // The lock service's answer to one control call on the node owning addr.
  Result<nlohmann::json> Call(uint64_t addr, nlohmann::json request);

  Connections* connections_;
};

}  // namespace pulse
