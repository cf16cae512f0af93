// `pulse bench engine`: the engine on one core against a plain
// run-to-completion chase and a hand-interleaved prefetching chase of the
// same randomly permuted list (the three figures, side by side).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "pulse/status.h"

namespace pulse::bench {

struct EngineBenchOptions {
  double size_gib = 4.0;           // list size; nodes = size / node_bytes
  uint32_t node_bytes = 256;
  uint32_t hops_per_request = 1024;
  uint32_t workspaces = 16;        // engine workspaces = chains of the MLP chase
  double seconds = 1.5;            // per measurement
  uint32_t rounds = 3;             // each figure is the median of this many runs
  uint32_t pipelines = 1;          // > 1: also measure that many pipelines, one thread each
  uint64_t seed = 42;
  std::function<void(const std::string&)> progress;  // optional progress lines
};

struct EngineBenchResult {
  uint64_t nodes = 0;
  uint32_t node_bytes = 0;
  uint32_t workspaces = 0;
  uint32_t instructions_per_iteration = 0;
  uint32_t window_bytes = 0;
  uint64_t huge_page_bytes = 0;     // AnonHugePages backing the list
  double build_seconds = 0;
  double engine_hops_per_sec = 0;
  double native_hops_per_sec = 0;
  double mlp_limit_hops_per_sec = 0;
  uint64_t checked_requests = 0;    // engine results compared with the native walk
  uint32_t pipelines = 1;
  double engine_all_pipelines_hops_per_sec = 0;  // when pipelines > 1
};

// Builds the list and measures.  Fails if memory cannot be mapped or the
// engine's results disagree with the native walk.
Result<EngineBenchResult> RunEngineBench(const EngineBenchOptions& options);

}  // namespace pulse::bench
