// Traversals executed at the CPU node: the whole traversal over one-sided
// reads (the dispatch engine's choice, ExecutionMode::kCpuNode; windows in
// the local rack's pool are loads, OneSidedAccess), or the prefix whose
// windows are local — in the rack pool (docs/racks.md) or held by the
// CPU-node cache — before the rest is offloaded from the first window that
// is not.  Protection as on the memory nodes: only memory this client
// allocated is read or written here.
//
// Thread-safety: none; it belongs to its Client's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "client/connections.h"
#include "client/far_allocator.h"
#include "client/one_sided.h"
#include "pulse/client.h"
#include "pulse/program.h"

namespace pulse {

class LocalExecution {
 public:
  // Every argument must outlive this.
  LocalExecution(Connections* connections, OneSidedAccess* access, const FarAllocator* allocator,
                 ClientCounters* counters)
      : connections_(connections), access_(access), allocator_(allocator), counters_(counters) {}

  // Runs the traversal here, one remote read per window.  Its result
  // (offloaded = false), or Unavailable when a remote read failed.
  Result<TraversalResult> Run(const VerifiedProgram& program, uint64_t cur_ptr, std::vector<uint8_t> scratch,
                              const TraverseOptions& options);

  // Where a cached prefix stopped: the state to offload from.
  struct Stopped {
    uint64_t cur_ptr = 0;
    std::vector<uint8_t> scratch;
    uint32_t iterations = 0;
  };
  // Runs the traversal here while its windows are in the rack pool or
  // cached.  The result if it ended here, else where it stopped.
  std::variant<TraversalResult, Stopped> RunWhileLocal(const VerifiedProgram& program, uint64_t cur_ptr,
                                                   std::vector<uint8_t> scratch, const TraverseOptions& options);

 private:
  Connections* connections_;
  OneSidedAccess* access_;
  const FarAllocator* allocator_;
  ClientCounters* counters_;
};

}  // namespace pulse
