// Traversals: the state an iterator carries between iterations and between
// nodes, the outcomes an engine reports, and the reference interpreter.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "pulse/memory.h"
#include "pulse/program.h"
#include "pulse/status.h"

namespace pulse {

// How a run of a traversal ended.  Stable numeric values (they travel on the
// wire).  Only kDone is final; kContinue, kNotLocal and kAllocExhausted leave
// a state from which the traversal can be re-issued unchanged.
enum class TraversalStatus : uint8_t {
  kDone = 0,             // RETURN reached: the scratch pad is the answer
  kContinue = 1,         // the iteration limit was reached; re-issue to go on
  kNotLocal = 2,         // cur_ptr is in no local range (route it elsewhere)
  kAllocExhausted = 3,   // ALLOC found no pre-allocated region left
  kFaultProtection = 4,  // a range of another tenant, or STORE to read-only
  kFaultBounds = 5,      // window crosses its range's end, or an indexed
                         // operand left the window / scratch pad
  kFaultDivZero = 6,
  kFaultBadRequest = 7,  // scratch pad shorter than the program needs, ...
  kFaultInvalidPointer = 8,  // no node owns cur_ptr (reported by the switch)
  kUnknownProgram = 9,   // the memory node has no program with that hash:
                         // re-send the request with the program attached
  kNodeUnavailable = 10, // the memory node owning cur_ptr is down (reported
                         // by the switch); the state is intact
  kOutcomeUnknown = 11,  // a STORE-bearing request retransmitted to a memory
                         // node that restarted after it began running it:
                         // it may or may not have taken effect (not re-run)
};

// "done", "protection fault", ... (for messages).
std::string_view TraversalStatusName(TraversalStatus s);

// The Status code that fits a traversal that ended with `s`, for callers
// that turn a TraversalResult into an error:
//   kDone -> kOk;  kContinue (iteration budget spent), kAllocExhausted ->
//   kResourceExhausted;  kNotLocal, kFaultInvalidPointer (no node owns the
//   address), kUnknownProgram -> kNotFound;  kFaultProtection ->
//   kPermissionDenied;  kFaultBounds -> kOutOfRange;  kFaultDivZero,
//   kFaultBadRequest -> kInvalidArgument;  kNodeUnavailable -> kUnavailable;
//   kOutcomeUnknown -> kOutcomeUnknown;  a value outside the enum ->
//   kInternal.
Status::Code TraversalStatusCode(TraversalStatus s);
// OK for kDone; otherwise a Status with TraversalStatusCode(s) and the
// message "<what>: traversal ended with <name> at <fault_addr> (pc <fault_pc>)".
Status TraversalStatusError(TraversalStatus s, std::string_view what, uint64_t fault_addr = 0,
                            uint32_t fault_pc = 0);
inline bool IsFault(TraversalStatus s) {
  return s >= TraversalStatus::kFaultProtection && s <= TraversalStatus::kFaultInvalidPointer;
}

// The iterator's state: everything needed to resume it anywhere.
// Registers do not survive an iteration (the verifier rejects reads of
// registers not written earlier in the same iteration).
struct TraversalState {
  uint64_t cur_ptr = 0;
  std::vector<uint8_t> scratch;  // the scratch pad
  uint32_t iterations = 0;       // iterations completed, over all runs
};

// Details of how a run ended.
struct TraversalOutcome {
  TraversalStatus status = TraversalStatus::kDone;
  uint32_t iterations = 0;   // iterations completed in this run
  uint32_t fault_pc = 0;     // instruction index of a fault
  uint64_t fault_addr = 0;   // far address involved in a fault / not-local
};

// Far memory as the interpreter sees it: one window read per iteration and
// STOREs.  Implementations: a local RangeTable (the memory node, tests) and
// the CPU-node client's remote reads (traversals that are not offloaded).
class FarMemory {
 public:
  virtual ~FarMemory() = default;
  // Copies [addr, addr+len) into dst.  Returns kDone, or the status that
  // stops the traversal (kNotLocal, kFaultProtection, kFaultBounds, ...).
  virtual TraversalStatus ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) = 0;
  // Writes len bytes (1, 2, 4 or 8) at addr.  Returns kDone or the fault
  // (kFaultInvalidPointer when no range holds addr).
  virtual TraversalStatus Store(uint64_t addr, const uint8_t* src, uint32_t len) = 0;
};

// FarMemory over a local range table, with the permissions of one tenant.
class RangeTableMemory : public FarMemory {
 public:
  RangeTableMemory(const RangeTable& table, TenantId tenant) : table_(table), tenant_(tenant) {}
  TraversalStatus ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) override;
  TraversalStatus Store(uint64_t addr, const uint8_t* src, uint32_t len) override;

 private:
  const RangeTable& table_;
  TenantId tenant_;
};

// Runs one traversal, one instruction at a time, with no prefetching or
// interleaving: the specification the engine is tested against, and the
// CPU-node executor for traversals that are not offloaded.  Runs at most
// max_iterations iterations (then kContinue).  state is updated in place.
// Thread-compatible.
TraversalOutcome InterpretTraversal(const VerifiedProgram& program, FarMemory& memory,
                                    uint32_t max_iterations, TraversalState* state);

// Convenience: InterpretTraversal over RangeTableMemory(table, tenant).
TraversalOutcome InterpretTraversal(const VerifiedProgram& program,
                                    const RangeTable& table, TenantId tenant,
                                    uint32_t max_iterations,
                                    TraversalState* state);

}  // namespace pulse
