// Native code for one verified program's iteration (x86-64, generated with
// xbyak; docs/engine.md says why).  The generated function is the logic
// pipeline of the interleaving engine for that program: it runs from
// instruction 1 (the LOAD is the scheduler's) to NEXT_ITER, RETURN or a
// fault, on a Frame whose window has been translated, protection-checked and
// loaded by the memory pipeline.  Everything the interpreter checks at run
// time is checked in the generated code: indexed operands against the window
// and scratch pad, division by zero; far STOREs, ALLOC and PREFETCH call back
// into the engine (JitHooks), which translates and protection-checks through the range
// table exactly as the interpreted path does.  The code is written into
// read-write pages that become read-execute before it first runs: never
// writable and executable at once.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/frame.h"
#include "pulse/program.h"
#include "pulse/status.h"
#include "pulse/traversal.h"

namespace pulse::engine {

// How an iteration of generated code ended: RunResult::kNext for NEXT_ITER,
// kReturn for RETURN, else a fault with its status and instruction index.
struct JitExit {
  static constexpr uint32_t kNext = 0;
  static constexpr uint32_t kReturn = 1;
  static constexpr uint32_t kFaultFlag = 0x80;  // | uint8_t(TraversalStatus)

  uint64_t raw = 0;  // (pc << 8) | code
  uint32_t code() const { return static_cast<uint32_t>(raw & 0xff); }
  uint32_t pc() const { return static_cast<uint32_t>(raw >> 8); }
  TraversalStatus status() const { return static_cast<TraversalStatus>(code() & 0x7f); }
};

// The engine's side of STORE, ALLOC and PREFETCH.  store and alloc return
// the TraversalStatus (kDone to go on) as a uint32_t; a STORE fault sets
// frame->fault_addr.  prefetch is a hint and cannot fail; without it the
// generated code treats PREFETCH as a no-op.
struct JitHooks {
  uint32_t (*store)(Frame* frame, uint64_t addr, uint64_t value, uint32_t width) = nullptr;
  uint32_t (*alloc)(Frame* frame, uint64_t table_offset, uint32_t dst_reg) = nullptr;
  void (*prefetch)(Frame* frame, uint64_t addr) = nullptr;
};

// One program's generated code.  Immutable after Compile; Run is thread-safe
// on distinct frames.
class JitProgram {
 public:
  ~JitProgram();
  JitProgram(const JitProgram&) = delete;
  JitProgram& operator=(const JitProgram&) = delete;

  // Generates code for `program`.  Returns FailedPrecondition where the host has
  // no backend (the caller interprets instead), Internal if generation
  // failed (an instruction the backend does not know, or the code buffer).
  static Result<std::unique_ptr<JitProgram>> Compile(const VerifiedProgram& program, const JitHooks& hooks);

  // Runs one iteration on `frame` (window already in frame->data).
  JitExit Run(Frame* frame) const { return JitExit{entry_(frame)}; }

  size_t code_bytes() const { return code_bytes_; }
  // The generated code's first byte (tests check its page protection).
  const void* code() const { return reinterpret_cast<const void*>(entry_); }

 private:
  struct Code;
  JitProgram() = default;
  std::unique_ptr<Code> code_;
  uint64_t (*entry_)(Frame*) = nullptr;
  size_t code_bytes_ = 0;
};

// True when this build has a code generator for the host (x86-64).
bool JitAvailable();

}  // namespace pulse::engine
