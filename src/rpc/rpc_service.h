// The memory node's RPC service (the `rpc` and `rpc-wimpy` baselines), without
// I/O: decodes a request, runs the native handler to completion against the
// node's range table with the caller's tenant, and encodes the reply.
// Requests flagged kRpcFlagWimpy are stretched to emulate a core of
// core_ghz, or of the clock the request names (kRpcFlagCoreMhzShift)
// (src/rpc/core_clock.h explains how, and how host_ghz is found).
// A retransmitted request is simply run again: the reading handlers do not
// mind, and the writing ones (kRpcKvPut, kRpcKvDelete) are sent by clients
// that never retransmit (RpcOptions::max_attempts = 1).
//
// Not thread-safe: the memory node's network thread drives it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "pulse/memory.h"
#include "pulse/status.h"

namespace pulse::rpc {

struct RpcServiceOptions {
  double core_ghz = 1.0;         // the emulated wimpy core (kRpcFlagWimpy requests)
  double host_ghz = 0;           // 0: measure at construction (about 20 ms)
  uint32_t max_steps = 1 << 16;  // far objects per call before kContinue
  uint32_t max_state_bytes = 4096;
};

struct RpcServiceCounters {
  uint64_t calls = 0;          // requests that ran a handler
  uint64_t wimpy_calls = 0;    // ... of them slowed down
  uint64_t bad_requests = 0;   // answered with kFaultBadRequest
  uint64_t refused = 0;        // answered kFaultProtection: the caller may not act for the tenant
  uint64_t malformed = 0;      // dropped: not even a request id to answer
  uint64_t not_local = 0;      // stopped at a node boundary
  uint64_t continues = 0;      // stopped at max_steps
  uint64_t faults = 0;
  uint64_t steps = 0;          // far objects read by handlers
  uint64_t exec_ns = 0;        // handler time at full speed
  uint64_t spin_ns = 0;        // added by the wimpy-core emulation
};

class RpcService {
 public:
  // `table` must outlive the service.  [span_base, span_base + span_size)
  // is the node's far span.
  RpcService(const RangeTable* table, uint64_t span_base, uint64_t span_size, const RpcServiceOptions& options);

  // The reply to one request message, or nullopt if it is so malformed that
  // it cannot be answered (counted in `malformed`).  `authorize` (if set)
  // is asked whether the caller may act for the tenant the request claims;
  // a refusal is answered kFaultProtection with its message and no handler
  // runs (counted in `refused`).  Unset: the claim is trusted (unit tests).
  std::optional<std::vector<uint8_t>> Handle(std::span<const uint8_t> payload,
                                             const std::function<Status(TenantId)>& authorize = nullptr);

  void set_span(uint64_t span_base, uint64_t span_size) {
    span_base_ = span_base;
    span_size_ = span_size;
  }
  double host_ghz() const { return host_ghz_; }
  double core_ghz() const { return options_.core_ghz; }
  const RpcServiceCounters& counters() const { return counters_; }

 private:
  const RangeTable* table_;
  uint64_t span_base_, span_size_;
  RpcServiceOptions options_;
  double host_ghz_;
  RpcServiceCounters counters_;
};

}  // namespace pulse::rpc
