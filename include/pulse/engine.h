// The memory-node engine: the software accelerator of seed 000 4.2.
//
// A Pipeline is one memory pipeline plus one logic pipeline sharing a set of
// workspaces, run by the calling thread.  Each workspace holds one
// traversal (cur_ptr, the loaded data window, the scratch pad, registers).
// The scheduler cycles through the workspaces: when a traversal reaches
// NEXT_ITER the memory pipeline translates and protection-checks the new
// cur_ptr and issues software prefetches for its window; the logic pipeline
// then moves on to the next workspace, whose window was prefetched a round
// earlier.  With enough workspaces the memory latency of one hides behind the
// computation of the others (the software form of Fig. 3(c)).  The cycle
// is limited to an active set (EngineOptions::active_workspaces; by default
// 32 for the JIT, every workspace for the interpreter): admitted traversals
// beyond it wait in a FIFO ready queue and take turns, so that one round's
// data stays in L1D however many workspaces are configured.
//
// Mapping to threads: one Pipeline per thread, W workspaces each
// (EngineOptions::workspaces, default 16).  A software "logic pipeline" is
// the same thread as its memory pipeline: the paper's eta logic pipelines
// and 2*eta workspaces per memory pipeline become W workspaces interleaved
// by one thread, since adding a logic pipeline in software costs nothing
// but a workspace.  P memory pipelines are P threads with a Pipeline each
// (`pulse bench engine --pipelines P` measures that).  `pulse memnode` runs
// one Pipeline on its network thread by default, so that a request needs no
// handoff between threads; `pulse memnode --pipelines P` runs P of them on
// threads of their own over its one range table (src/memnode/pipeline_threads.h).
//
// Engines.  The logic pipeline either interprets a program's decoded form or
// runs native code generated for it when the pipeline first admits it
// (EngineKind::kJit, x86-64; docs/engine.md).  Both report exactly what the
// reference interpreter (InterpretTraversal) reports: status, fault pc,
// fault address, scratch pad and far memory.  A program the JIT cannot
// translate is interpreted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "pulse/memory.h"
#include "pulse/program.h"
#include "pulse/traversal.h"

namespace pulse {

enum class EngineKind : uint8_t {
  kInterpreter = 0,  // the decoded-program interpreter (every architecture)
  kJit = 1,          // native code per program, where a backend exists
};

// kJit where this build has a code generator for the host (x86-64), else
// kInterpreter.
EngineKind DefaultEngineKind();
// "interp" or "jit".
std::string_view EngineKindName(EngineKind kind);
// Inverse of EngineKindName; nullopt for any other name.
std::optional<EngineKind> EngineKindFromName(std::string_view name);

// Most pipelines (threads) one memory node runs.
inline constexpr uint32_t kMaxPipelinesPerNode = 64;

// The active set.  A pipeline admits up to `workspaces` traversals but
// interleaves at most `active_workspaces` of them in its round-robin; the
// others wait in a FIFO ready queue and take a slot when an active one
// finishes, or every `turn_rounds` rounds (one iteration of each active
// traversal per round) while some wait: the first min(K, waiting) slots then
// change hands, and the traversals leaving them go to the back of the queue.
// A traversal thus waits at most ceil(waiting / K) turns.  One round of the
// active set must fit in L1D (and its windows' pages in the L1 DTLB) for a
// window prefetched a round earlier to be there when its iteration runs
// (docs/engine.md, "The active set").
inline constexpr uint32_t kAutoActiveWorkspaces = 0;

// The active set kAutoActiveWorkspaces gives the JIT.  A window is
// prefetched one round (K iterations) before its iteration reads it, so a
// round must outlast a miss with its page walk (~300 ns: the interleaved
// limit is already flat from 16 chains; 16 JIT iterations of ~20 ns) and its
// data must survive the round: 32 iterations touch ~4 lines each (8 KiB of
// L1D) on ~36 pages, within the first-level DTLB; 64 or 128 touch 2-4x that
// and the JIT measured 6-14% slower with all 128 interleaved.  The
// interpreter's iteration is 2-4x longer, its round hides the miss whatever
// K is, and it measured flat with no limit (docs/engine.md, "The default
// active set, per engine").
inline constexpr uint32_t kJitActiveWorkspaces = 32;

struct EngineOptions {
  EngineKind engine = DefaultEngineKind();  // kJit without a backend interprets
  uint32_t workspaces = 16;        // concurrent traversals per pipeline (admitted)
  // Traversals interleaved at once (<= workspaces); kAutoActiveWorkspaces:
  // the measured default, ActiveWorkspacesFor().
  uint32_t active_workspaces = kAutoActiveWorkspaces;
  uint32_t turn_rounds = 64;       // rounds between rotations while some wait (0 is taken as 1)
  uint32_t max_iterations = 4096;  // MAX_ITER when a request does not set one
  uint32_t scratch_pad_bytes = isa::kDefaultScratchPadBytes;  // largest accepted
};

// The active-set size a pipeline with these options runs: the explicit
// `active_workspaces` (capped at `workspaces`), or for kAutoActiveWorkspaces
// the engine's measured value: kJitActiveWorkspaces for the JIT (where this
// host has a backend, else the pipeline interprets), no limit (`workspaces`)
// for the interpreter.  Never 0.
uint32_t ActiveWorkspacesFor(const EngineOptions& options);

// One request to the engine.  The engine owns it while it runs and hands it
// back, with state updated, to the completion callback.
struct TraversalRequest {
  uint64_t id = 0;
  ProgramRef program;
  TenantId tenant = 0;
  uint32_t max_iterations = 0;  // 0: EngineOptions::max_iterations
  TraversalState state;
  void* user = nullptr;         // caller's context, untouched
};

using CompletionFn = std::function<void(TraversalRequest&&, const TraversalOutcome&)>;

// One interleaving pipeline.  Not thread-safe: one thread drives it.
// The RangeTable must outlive the pipeline and may change only between Run()
// calls, followed by OnRangeTableChanged().
class Pipeline {
 public:
  Pipeline(const RangeTable* table, const EngineOptions& options);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // True if Admit() would accept a request now.
  bool HasFreeWorkspace() const;
  // Starts a traversal in a free workspace.  Requires HasFreeWorkspace().
  // A request that cannot start (scratch pad too short or too long, cur_ptr
  // not local, ...) completes at the next Run() with the matching status.
  void Admit(TraversalRequest&& request);
  // Runs scheduler rounds until no traversal is active or at least
  // `max_iterations_budget` iterations have been executed; calls `done` for
  // every traversal that finishes.  `done` may call Admit().  Returns the
  // number of iterations executed.
  uint64_t Run(const CompletionFn& done, uint64_t max_iterations_budget = UINT64_MAX);

  // Must be called after the RangeTable changed (between Run() calls): drops
  // the pipeline's cached translation.
  void OnRangeTableChanged();

  // Traversals admitted and not yet completed (interleaved or waiting).
  uint32_t active() const;
  uint32_t capacity() const;
  // The active-set size: at most this many traversals are interleaved.
  uint32_t active_limit() const;
  // Scheduler rounds run so far (one pass over the active set each); for
  // tests and benchmarks that count progress in rounds.
  uint64_t rounds() const;

  // The engine this pipeline runs: options.engine, or kInterpreter where
  // the host has no code generator.
  EngineKind engine() const;
  // Programs compiled to native code so far, and the time that took.
  uint64_t jit_compiled_programs() const;
  uint64_t jit_compile_nanos() const;
  // PREFETCH hints (isa.h) acted on, and those ignored because the window
  // at their address is not the traversal tenant's to read at this node.
  uint64_t prefetches_issued() const;
  uint64_t prefetches_ignored() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pulse
