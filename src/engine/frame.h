// The per-workspace state the logic pipeline touches on every iteration,
// laid out for the scheduler's cache footprint and addressed by offset from
// generated code (engine/jit.h).  Shared by the interleaving engine and its
// JIT; not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pulse/isa.h"
#include "pulse/traversal.h"

namespace pulse::engine {

struct DecodedProgram;  // pipeline.cc

// Index of cur_ptr in Frame::regs; r0..r15 follow it.
inline constexpr int kCurPtrSlot = 0;
inline constexpr int RegSlot(int reg) { return reg + 1; }

// Standard layout: the JIT reads and writes these fields at their offsets.
// Line 0 holds what every iteration needs (window, scratch pad, compare state
// and cur_ptr); the registers follow on lines 1-2; the scheduler's own hot
// fields live right after (Workspace in pipeline.cc), so that a list walk
// touches two lines of its workspace plus its scratch pad and window.
struct alignas(64) Frame {
  const uint8_t* data = nullptr;  // the data window: the workspace's copy, or
                                  // the node itself when the program never
                                  // writes data[] nor STOREs (read in place)
  uint8_t* sp = nullptr;          // the scratch pad
  uint64_t sp_len = 0;
  uint64_t cmp_lhs = 0, cmp_rhs = 0;  // last COMPARE, zero-extended from its width
  uint32_t cmp_width = 8;             // (the interpreted path)
  uint32_t unused = 0;
  uint64_t cmp_slhs = 0;          // last COMPARE, sign-extended (the JIT's signed jumps)
  uint64_t regs[isa::kNumRegisters + 1] = {};  // cur_ptr, then r0..r15
  // Line 3: the rest of the compare state, then the scheduler's fields
  // (generated code reads only cmp_srhs, fault_addr, engine and tenant).
  uint64_t cmp_srhs = 0;
  uint64_t fault_addr = 0;        // set by a STORE that faults
  void* engine = nullptr;         // the Pipeline::Impl running this frame (JIT hooks)
  const uint8_t* window_src = nullptr;  // host address of the next window
  DecodedProgram* prog = nullptr;
  uint64_t pending_addr = 0;      // fault address of a failed admission
  uint32_t tenant = 0;
  uint32_t iterations = 0;
  uint32_t max_iterations = 0;
  TraversalStatus pending = TraversalStatus::kDone;  // set when admission failed
};

static_assert(offsetof(Frame, regs) == 56, "cur_ptr shares line 0 with the window and scratch pad");
static_assert(sizeof(Frame) == 256, "four cache lines");

}  // namespace pulse::engine
