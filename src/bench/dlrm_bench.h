// `pulse bench dlrm`: the embedding reduction of DLRM inference (seed 002
// IV-C, pulse::dlrm) against a local cluster it starts (or one it joins):
// the offloaded reduction and the baseline, the CPU node gathering rows with
// one-sided reads and reducing locally, side by side over the same tables
// and the same queries.  Every answer of both is checked against the plain
// reference (pulse/dlrm/quantized.h).
//
// The data and the queries are synthetic (the paper's Amazon Review data is
// not reachable here): rows are float vectors drawn from N(0, 0.5) with a
// fixed seed, quantized per row; each query draws `lookups` indices per
// table from a Zipf distribution over the table's rows (YCSB's generator,
// theta 0.99, row 0 the hottest) or uniformly.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/traverse_bench.h"
#include "pulse/status.h"

namespace pulse::bench {

struct DlrmBenchOptions {
  uint32_t tables = 8;
  uint64_t rows = 100000;           // per table
  uint32_t dim = 64;
  uint32_t lookups = 32;            // indices per table per query
  std::string distribution = "zipf";  // zipf | uniform
  std::string reduction = "sum";    // sum | max | min
  uint32_t concurrency = 2;         // closed-loop clients, each a thread with its own Client
  uint32_t chunks_per_traversal = 16;
  uint32_t max_in_flight = 32;      // traversals of one query at once (EmbeddingOptions)
  double seconds = 3;               // measured phase per system
  uint32_t warmup_queries = 20;     // per client and system
  uint32_t memory_nodes = 1;
  uint64_t seed = 42;
  std::string switch_address;       // join this cluster; empty: start one
  std::string run_dir, ucx_tls, binary;
  std::function<void(const std::string&)> progress;
};

// The figures of one system over its measured phase.
struct DlrmSystemResult {
  std::string system;               // "offload" | "gather"
  uint64_t queries = 0;
  double seconds = 0;
  double throughput_qps = 0;
  LatencyStats latency;
  std::optional<double> mn_cpu_us_per_query;
  double rows_loaded_per_query = 0;      // chunks loaded near memory / rows read one-sidedly
  double traversals_per_query = 0;       // offload
  double mn_iterations_per_query = 0;    // engine iterations at the memory nodes
  double messages_per_query = 0;         // active messages the CPU node sent
  double one_sided_ops_per_query = 0;    // Get/Put operations the CPU node started
  double bytes_per_query = 0;            // message payload both ways plus one-sided bytes
  double retransmissions_per_query = 0;  // traversals and one-sided operations sent again after a timeout
  uint64_t verified = 0;                 // answers equal to the reference
  uint64_t mismatches = 0;
  std::string first_mismatch;
};

struct DlrmBenchResult {
  std::vector<DlrmSystemResult> systems;  // offload, gather
  double load_seconds = 0;
  std::string switch_address;
  bool own_cluster = false;
};

// Errors: InvalidArgument naming a bad option; those of the cluster, the
// load and any query (a mismatch is not an error: it is counted).
Result<DlrmBenchResult> RunDlrmBench(const DlrmBenchOptions& options);

// Answers of either system that differed from the reference.
uint64_t DlrmMismatches(const DlrmBenchResult& result);

// The run's configuration and both systems' figures side by side, with the
// ratio offload / gather of throughput (what `--json` prints).
nlohmann::json DlrmBenchJson(const DlrmBenchOptions& options, const DlrmBenchResult& result);

}  // namespace pulse::bench
