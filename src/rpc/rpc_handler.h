// Native RPC handlers of the memory node (the `rpc` and `rpc-wimpy`
// baselines): a traversal written as plain C++, run to completion on the
// memory node's CPU per request.
//
// A handler gets the start pointer, its resumable state (fixed size, in and
// out: the argument and the answer) and an output buffer it may append to
// (e.g. scan results).  It reads far memory only through RpcMemory, which
// translates and protection-checks every access against the node's range
// table with the caller's tenant, as the engine does for pulse traversals
// (engine/access.h).  When the next object is not on this node, the handler
// returns Stopped(): the reply carries the pointer and the state, and the CPU
// node re-issues the call to the owner, which resumes from there.  A handler
// must therefore keep everything it needs to go on in its state.
//
// Adding a handler (e.g. the time-series tree of src/apps): write one .cc
// file in src/rpc/handlers/ defining `extern const pulse::rpc::RpcHandler kRpcHandler_<name>`
// (add it to src/rpc/CMakeLists.txt: the rpc layer), and add one line
// `X(<name>)` to PULSE_RPC_HANDLERS in src/rpc/handlers/handler_table.cc.
// Pick an id not used in that list; clients name the handler by that id.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "pulse/memory.h"
#include "pulse/traversal.h"

namespace pulse::rpc {

// How a handler run ended.  kDone: the state is the answer.  kNotLocal /
// kContinue: resume at next_ptr with the returned state.  Faults as for
// traversals (kFaultProtection, kFaultBounds, kFaultInvalidPointer,
// kFaultBadRequest), with fault_addr.
struct RpcOutcome {
  TraversalStatus status = TraversalStatus::kDone;
  uint64_t next_ptr = 0;
  uint64_t fault_addr = 0;
};

// Far memory as a handler sees it: this node's ranges, checked for one
// tenant.  Not thread-safe; one per call.
class RpcMemory {
 public:
  // `span_base`/`span_size`: the node's far span; an address inside it that
  // no range holds is an invalid pointer, one outside it belongs to another
  // node (kNotLocal).  `max_steps` bounds the objects one call may read
  // (then kContinue), so that a cyclic structure cannot hold the node.
  RpcMemory(const RangeTable& table, TenantId tenant, uint64_t span_base, uint64_t span_size,
            uint32_t max_steps);

  // A host pointer to [addr, addr + len) if the tenant may read it, valid
  // for the call; nullptr otherwise, and Stopped() then says why.
  const uint8_t* Read(uint64_t addr, uint64_t len);
  // Copies one object; false (see Stopped()) if it may not be read.
  template <typename T>
  bool Load(uint64_t addr, T* out) {
    const uint8_t* p = Read(addr, sizeof(T));
    if (p == nullptr) return false;
    std::memcpy(out, p, sizeof(T));
    return true;
  }
  // A host pointer to [addr, addr + len) if the tenant may write it, valid
  // for the call; nullptr otherwise, and Stopped() then says why.  Not a
  // step (steps count objects read).  A handler that writes must not be
  // run twice for one request: its client sends it once (max_attempts 1).
  uint8_t* Write(uint64_t addr, uint64_t len);
  // Stores one object; false (see Stopped()) if it may not be written.
  template <typename T>
  bool Store(uint64_t addr, const T& value) {
    uint8_t* p = Write(addr, sizeof(T));
    if (p == nullptr) return false;
    std::memcpy(p, &value, sizeof(T));
    return true;
  }
  // The outcome to return after Read/Load/Write/Store failed.
  RpcOutcome Stopped() const { return stop_; }
  // Objects read so far.
  uint32_t steps() const { return steps_; }

 private:
  const RangeTable& table_;
  TenantId tenant_;
  uint64_t span_base_, span_size_;
  uint32_t max_steps_;
  uint32_t steps_ = 0;
  const Range* last_ = nullptr;  // one-entry translation cache, as the engine's
  RpcOutcome stop_;
};

using RpcHandlerFn = RpcOutcome (*)(RpcMemory& memory, uint64_t start, std::span<uint8_t> state,
                                    std::vector<uint8_t>* output);

struct RpcHandler {
  uint16_t id = 0;
  const char* name = "";
  uint32_t state_bytes = 0;  // the exact size of the state a request must carry
  RpcHandlerFn run = nullptr;
};

// The registered handler with this id, or nullptr.
const RpcHandler* FindRpcHandler(uint16_t id);
// Every registered handler.
std::span<const RpcHandler* const> RpcHandlers();

// Helpers for handlers: the state as a struct.
template <typename T>
T StateAs(std::span<const uint8_t> state) {
  T t;
  std::memcpy(&t, state.data(), sizeof(T));
  return t;
}
template <typename T>
void StoreState(std::span<uint8_t> state, const T& t) {
  std::memcpy(state.data(), &t, sizeof(T));
}

}  // namespace pulse::rpc
