// `pulse bench ds`: far-memory data structures looked up offloaded (on the
// memory nodes) and at the CPU node (the same iterator over one-sided
// reads), side by side in one run.  For every structure (a DsBenchTarget,
// src/bench/ds_bench_target.h) it loads keys 0..n-1, then runs lookups of
// random keys (about one in eleven absent) in interleaved rounds, offloaded
// then CPU node in each, and reports per mode: latency (p50 etc.), lookups
// per second (median over rounds; one lookup in flight, as the target
// interface is synchronous), iterations, bytes on the wire, cross-node
// traversals and cache hits per lookup.  Every answer is checked against the
// loaded keys; a wrong one fails the run.
//
// Each structure gets its own Client (so counters are its own); targets
// whose name ends in "_partitioned" get AllocationPolicy::kPartitioned, the
// others kUniform.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/ds_bench_target.h"
#include "bench/traverse_bench.h"
#include "pulse/status.h"

namespace pulse::bench {

struct DsBenchOptions {
  std::string switch_address;  // join this cluster; empty: start a local one
  std::string binary, run_dir, ucx_tls;  // for a started cluster (as TraverseBenchOptions)
  uint32_t memory_nodes = 2;   // of a started cluster
  std::vector<std::string> structures;  // empty: every target
  uint64_t keys = 2000;
  uint32_t lookups = 400;      // measured lookups per structure and mode
  uint32_t rounds = 4;
  uint32_t warmup = 20;        // unmeasured lookups per mode and round
  uint64_t cache_bytes = 0;    // CPU-node cache of each client (ClientOptions::cache); 0: none
  uint64_t seed = 1;
  uint32_t request_timeout_ms = 1000;  // ClientOptions::request_timeout (a loaded host needs slack)
  std::function<void(const std::string&)> progress;
};

struct DsModeResult {
  LatencyStats latency;
  double lookups_per_sec = 0;       // median over rounds
  double iterations_per_lookup = 0;
  double wire_bytes_per_lookup = 0; // AM payload bytes both ways + one-sided bytes, at the client
  double cross_node_per_lookup = 0; // switch forwards (offloaded) / node changes of windows (CPU node)
  double cache_hits_per_lookup = 0;
  double found_fraction = 0;
};

struct DsStructureResult {
  std::string name;
  uint64_t keys = 0;
  double load_seconds = 0;
  DsModeResult offload, cpu_node;
  uint64_t verified = 0;            // lookups whose answers were checked
};

struct DsBenchResult {
  std::vector<DsStructureResult> structures;
  uint32_t memory_nodes = 0;
  std::string switch_address;
  bool own_cluster = false;
  double load_average = 0;
};

// Runs the targets of `targets` selected by options.structures.  Errors:
// an unknown structure name, the cluster, a failed or wrong lookup.
Result<DsBenchResult> RunDsBench(const DsBenchOptions& options, DsBenchTargets targets);

}  // namespace pulse::bench
