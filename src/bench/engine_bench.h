// `pulse bench engine`: the engine on one core against a plain
// run-to-completion native traversal of the same structure and (for the
// list) a hand-interleaved prefetching chase -- the figures, side by
// side, over a sweep of workspace counts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pulse/engine.h"
#include "pulse/status.h"

namespace pulse::bench {

struct EngineBenchOptions {
  double size_gib = 4.0;           // structure size; nodes = size / node_bytes
  uint32_t node_bytes = 256;       // the B+tree always uses 256-byte nodes
  uint32_t hops_per_request = 1024;  // list walks
  uint32_t workspaces = 16;        // engine workspaces = chains of the MLP chase
  std::vector<uint32_t> sweep;     // workspace counts to measure; empty: {workspaces}
  uint32_t active_workspaces = kAutoActiveWorkspaces;  // the engine's active set (EngineOptions)
  EngineKind engine = DefaultEngineKind();
  bool compare_interpreter = true; // with the JIT: the interpreter too, at every count
  std::string program = "list";    // list | hash | btree
  double seconds = 1.5;            // per measurement
  bool thread_cpu_clock = false;   // seconds of the measuring thread's CPU time, not wall time
                                   // (a loaded machine: hops per CPU second)
  uint32_t rounds = 3;             // each figure is the median of this many runs
  uint32_t pipelines = 1;          // > 1: also measure that many pipelines, one thread each
  uint64_t seed = 42;
  std::function<void(const std::string&)> progress;  // optional progress lines
};

// One workspace count of the sweep.
struct EngineSweepPoint {
  uint32_t workspaces = 0;
  uint32_t active_workspaces = 0;     // the active set the engine ran at this count
  uint32_t interpreter_active_workspaces = 0;  // and the interpreter's (0: not measured)
  double engine_hops_per_sec = 0;
  double mlp_limit_hops_per_sec = 0;  // list only
  double interpreter_hops_per_sec = 0;  // with the JIT and compare_interpreter
};

struct EngineBenchResult {
  std::string program;
  std::string engine;               // "jit" or "interp": the engine that ran
  uint64_t nodes = 0;
  uint32_t node_bytes = 0;
  uint32_t workspaces = 0;          // the engine's best count
  uint32_t mlp_limit_workspaces = 0;  // the limit's best count
  std::vector<EngineSweepPoint> sweep;
  uint32_t instructions_per_iteration = 0;
  uint32_t window_bytes = 0;
  uint64_t huge_page_bytes = 0;     // AnonHugePages backing the structure
  double build_seconds = 0;
  double engine_hops_per_sec = 0;   // at the engine's best count
  double native_hops_per_sec = 0;
  double mlp_limit_hops_per_sec = 0;  // at the limit's best count (list only)
  double ns_per_iteration = 0;      // 1e9 / engine_hops_per_sec (one core)
  double interpreter_hops_per_sec = 0;  // the interpreter at its best count
  double jit_compile_us = 0;        // generating the program's code, per compile
  double hops_per_request = 0;      // mean iterations per traversal
  uint64_t checked_requests = 0;    // engine results compared with the native traversal
  uint32_t pipelines = 1;
  double engine_all_pipelines_hops_per_sec = 0;  // when pipelines > 1
};

// Builds the structure and measures.  Fails if memory cannot be mapped, the
// program name is unknown, or the engine's results disagree with the native
// traversal.
Result<EngineBenchResult> RunEngineBench(const EngineBenchOptions& options);

}  // namespace pulse::bench
