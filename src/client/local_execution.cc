#include "client/local_execution.h"

#include <algorithm>

#include <fmt/format.h>

namespace pulse {
namespace {

// Far memory seen from the CPU node: each window is one one-sided read (or
// served by the cache, or by loads through the rack pool: OneSidedAccess).
// Protection: only memory this client allocated is readable or writable.
// With local_only, a window neither in the rack pool nor entirely cached
// stops the traversal with kNotLocal, its state intact: the caller offloads
// it from there.
class RemoteMemory : public FarMemory {
 public:
  RemoteMemory(Connections* connections, OneSidedAccess* access, ClientCounters* counters, const FarAllocator* allocator,
               bool local_only = false)
      : connections_(connections), access_(access), counters_(counters), allocator_(allocator), local_only_(local_only) {}
  TraversalStatus ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) override {
    MemNode* node = connections_->NodeFor(addr);
    if (node == nullptr) return TraversalStatus::kFaultInvalidPointer;
    // Memory of another client (of the tenant, or not): the memory node
    // decides, by handing out its key or refusing (OneSidedAccess).
    if (local_only_ && !allocator_->Owns(addr, std::max<uint32_t>(len, 1))) return TraversalStatus::kNotLocal;
    if (len == 0) return TraversalStatus::kDone;
    if (local_only_) {
      if (access_->RackAccess(false, addr, dst, len)) {
        ++rack_windows_;
      } else if (!access_->caching() || !access_->cache()->ReadIfCached(addr, dst, len)) {
        return TraversalStatus::kNotLocal;
      }
    } else if (Status s = access_->Read(addr, dst, len); !s.ok()) {
      const bool refused = s.code() == Status::Code::kPermissionDenied || s.code() == Status::Code::kNotFound;
      return refused ? TraversalStatus::kFaultProtection : TraversalStatus::kNodeUnavailable;
    }
    // Cached windows cross no network: only reads at the CPU node count.
    if (!local_only_ && last_node_ != UINT32_MAX && node->id != last_node_) ++counters_->node_crossings;
    last_node_ = node->id;
    return TraversalStatus::kDone;
  }
  TraversalStatus Store(uint64_t addr, const uint8_t* src, uint32_t len) override {
    if (connections_->NodeFor(addr) == nullptr) return TraversalStatus::kFaultInvalidPointer;
    if (!allocator_->Owns(addr, len)) return TraversalStatus::kFaultProtection;
    return access_->Write(addr, src, len).ok() ? TraversalStatus::kDone : TraversalStatus::kNodeUnavailable;
  }

  // Windows read through the rack pool in a local_only run.
  uint64_t rack_windows() const { return rack_windows_; }

 private:
  Connections* connections_;
  OneSidedAccess* access_;
  ClientCounters* counters_;
  const FarAllocator* allocator_;
  bool local_only_;
  uint32_t last_node_ = UINT32_MAX;
  uint64_t rack_windows_ = 0;
};


// The result of a traversal that ended here.
TraversalResult ResultHere(TraversalStatus status, TraversalState& state, const TraversalOutcome& out) {
  return TraversalResult{.status = status, .cur_ptr = state.cur_ptr, .scratch = std::move(state.scratch),
                         .iterations = state.iterations, .fault_pc = out.fault_pc, .fault_addr = out.fault_addr,
                         .offloaded = false, .issues = 0, .retransmissions = 0};
}

}  // namespace

Result<TraversalResult> LocalExecution::Run(const VerifiedProgram& program, uint64_t cur_ptr,
                                            std::vector<uint8_t> scratch, const TraverseOptions& options) {
  ++counters_->executed_locally;
  RemoteMemory memory(connections_, access_, counters_, allocator_);
  TraversalState state;
  state.cur_ptr = cur_ptr;
  state.scratch = std::move(scratch);
  TraversalOutcome out;
  do {  // follow_continue is implicit here: nothing to re-issue to
    out = InterpretTraversal(program, memory, options.max_iterations ? options.max_iterations : 4096, &state);
  } while (out.status == TraversalStatus::kContinue && options.follow_continue);
  if (out.status == TraversalStatus::kNodeUnavailable)
    return Status::Unavailable(fmt::format("traversal: remote read near {:#x} failed", state.cur_ptr));
  counters_->traversal_iterations += state.iterations;
  return ResultHere(out.status == TraversalStatus::kNotLocal ? TraversalStatus::kFaultInvalidPointer : out.status,
                    state, out);
}

std::variant<TraversalResult, LocalExecution::Stopped> LocalExecution::RunWhileLocal(const VerifiedProgram& program,
                                                                                      uint64_t cur_ptr,
                                                                                      std::vector<uint8_t> scratch,
                                                                                      const TraverseOptions& options) {
  RemoteMemory memory(connections_, access_, counters_, allocator_, /*local_only=*/true);
  TraversalState state;
  state.cur_ptr = cur_ptr;
  state.scratch = std::move(scratch);
  TraversalOutcome out;
  do {
    out = InterpretTraversal(program, memory, options.max_iterations ? options.max_iterations : 4096, &state);
  } while (out.status == TraversalStatus::kContinue && options.follow_continue);
  if (access_->caching()) counters_->cache_local_iterations += state.iterations;
  if (memory.rack_windows() > 0) counters_->rack_prefix_iterations += state.iterations;
  if (out.status == TraversalStatus::kNotLocal) return Stopped{state.cur_ptr, std::move(state.scratch), state.iterations};
  if (memory.rack_windows() == 0) ++counters_->cache_only_traversals;
  ++counters_->executed_locally;
  counters_->traversal_iterations += state.iterations;
  return ResultHere(out.status, state, out);
}

}  // namespace pulse
