// `pulse bench traverse`: the request path of a cluster, measured in one run
// (issue 3's benchmark).  With a local cluster of two memory nodes (started
// here, or joined at a given switch address) and the CPU-node client:
//   raw_rtt      a no-op along the request path (CPU node -> switch -> memory
//                node -> switch -> CPU node): Client::Ping
//   offload_rtt  a one-iteration traversal along the same path
//   pulse        a 64-hop list traversal whose nodes alternate between the
//                two memory nodes every 8 hops; continuations go from memory
//                node to memory node through the switch
//   pulse_acc    the same traversal in pulse-acc mode: each "not local"
//                returns to the CPU node, which re-issues
// The figures are measured in interleaved rounds so that drift affects them
// alike.  Every traversal's answer (sum and count of the values on its
// path) is checked; a wrong one fails the run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse::bench {

// Latency figures of one kind of request, in microseconds.
struct LatencyStats {
  uint64_t count = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0, min_us = 0, max_us = 0;
};
LatencyStats Summarize(std::vector<double> samples_us);
// {"count", "mean_us", "p50_us", "p99_us", "min_us", "max_us"}.
nlohmann::json LatencyJson(const LatencyStats& stats);

struct TraverseBenchOptions {
  std::string switch_address;  // join this cluster; empty: start a local one
  std::string binary;          // the pulse executable for a started cluster (empty: this one)
  std::string run_dir;         // logs of a started cluster (empty: $PULSE_RUN_DIR, else "run")
  std::string ucx_tls;         // transports for the started nodes and the client (empty: UCX_TLS)
  // Nodes and client: adaptive polling window and the idle-core rule (as config/local.toml).
  uint32_t poll_window_us = 50;
  bool poll_when_core_idle = true;
  bool busy_poll = false;
  uint32_t hops = 64;          // nodes per list
  uint32_t hops_per_node = 8;  // consecutive nodes on one memory node
  uint32_t lists = 16;         // distinct lists, visited in turn
  uint32_t samples = 2000;     // measured requests per figure, over all rounds
  uint32_t rounds = 5;
  uint32_t warmup = 100;       // unmeasured requests per figure per round
  std::function<void(const std::string&)> progress;
};

struct TraverseBenchResult {
  LatencyStats raw_rtt, offload_rtt, pulse, pulse_acc;
  uint32_t hops = 0, hops_per_node = 0, memory_nodes = 0, lists = 0;
  uint32_t node_crossings = 0;     // memory-node changes along one list
  uint64_t verified = 0;           // traversals whose answers were checked
  uint64_t switch_forwards = 0;    // continuations the switch forwarded in the run
  uint64_t continuations = 0;      // all of them: the switch's plus those sent node to node (direct routing)
  uint64_t expected_forwards = 0;  // pulse-mode traversals x node_crossings
  uint64_t client_reissues = 0;    // pulse-acc re-issues (and any continue)
  uint64_t retransmissions = 0;
  std::string switch_address;
  bool own_cluster = false;
  std::string transport;           // UCX_TLS seen by the client ("" : UCX's choice)
  double load_average = 0;         // 1-minute load average when the measurement started
};

// Runs the benchmark.  Errors: the cluster could not be started or joined
// (fewer than two memory nodes), a request failed, or an answer was wrong
// (Internal, naming the mode, list and values).
Result<TraverseBenchResult> RunTraverseBench(const TraverseBenchOptions& options);

}  // namespace pulse::bench
