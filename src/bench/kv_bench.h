// `pulse bench kv`: the MICA-style KV store (pulse::kv::Store, docs/kv.md)
// at saturation over the ring path and the active-message path (issue 15,
// seed 002 IV-A), against a local cluster it starts (or one it joins):
// throughput, p50/p99 per request, memory accesses per GET and PUT,
// memory-node CPU per request (the nodes' cpu_us counter over the measured
// phase, as `pulse bench app` reads it), and messages and one-sided
// operations per request (KvPathResult).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/traverse_bench.h"
#include "pulse/status.h"

namespace pulse::bench {

struct KvBenchOptions {
  std::string path = "both";          // ring | ring-double | am | both | rings | all (pulse's paths)
  // pulse (the store's offloaded programs over `path`), rpc (the HERD-like
  // baseline: GET as the native handler kRpcKvGet on the memory node's CPU,
  // 100% GET only), rpc-wimpy (the same on the node's emulated wimpy core,
  // kRpcFlagWimpy), all (pulse's paths, then rpc and rpc-wimpy if the mix
  // is 100% GET).
  std::string system = "pulse";
  // get or 100/0 (100% GET) | 50 or 50/50 (50% GET, 50% PUT of present keys)
  std::string mix = "get";
  std::string distribution = "uniform";  // uniform | zipf (theta 0.9)
  uint64_t items = 100000;
  // Requests in flight (one batch); 0: a sweep (4, 8, 16, 32, 64) whose
  // best throughput is reported as the path's saturation point (on this
  // host's shared memory transport the message-carried traffic collapses
  // beyond some tens of messages in flight, at a different level per path).
  uint32_t concurrency = 0;
  uint32_t key_bytes = 16, value_bytes = 40;  // 64-byte items
  uint32_t memory_nodes = 1;
  double seconds = 2;                 // measured phase per path and concurrency level
  uint64_t seed = 42;
  std::string switch_address;         // join this cluster; empty: start one
  std::string run_dir, ucx_tls, binary;
  std::function<void(const std::string&)> progress;
};

struct KvPathResult {
  std::string path;                   // ring | ring-double | am | rpc
  uint32_t concurrency = 0;           // the level measured (the best of a sweep)
  nlohmann::json sweep;               // every level measured
  uint64_t ops = 0, gets = 0, puts = 0;
  double seconds = 0;
  double throughput_ops = 0;
  LatencyStats latency;
  double mn_cpu_us_per_op = 0;
  double client_cpu_us_per_op = 0;    // the bench process (the client), user + system
  nlohmann::json latency_histogram;   // requests per latency band (LatencyHistogram in kv_bench.cc)
  double accesses_per_get = 0, accesses_per_put = 0;
  uint64_t ring_requests = 0, ring_fallbacks = 0;
  uint64_t verified = 0;              // GET answers checked against the values loaded
  // Per request, counter deltas over the measured phase divided by `ops`
  // (TrafficBetween in kv_bench.cc).  Messages: the active messages this
  // client sent and received (net::Counters messages_sent and
  // messages_received: requests or their batches, answers, ring wake-ups
  // and their answers).  One-sided operations: the client's Get/Put
  // operations (rma_ops), its writes into rings mapped into its address
  // space (ClientInternal::ring_stores: entries, tails, wait words on one
  // host), and the memory nodes' responses and doorbells written into its
  // response rings (their `stats`.ring).  `traffic` holds the deltas.
  double messages_per_request = 0;
  double one_sided_per_request = 0;
  nlohmann::json traffic;
  // The ring path only: the memory nodes' ring serving per entry taken
  // (scans of the tails, empty scans, sleeps, wake-ups, doorbells; see
  // RingNodeCounters in kv_bench.cc); null for the other paths.
  nlohmann::json ring_node;
};

struct KvBenchResult {
  std::vector<KvPathResult> paths;
  double accesses_per_get = 0;
  double accesses_per_put = 0;
  std::string accesses_per_put_from;  // "run" or "load" (100% GET runs have no PUT)
  double load_average = 0;
  nlohmann::json ToJson(const KvBenchOptions& o) const;
};

// Errors: InvalidArgument naming a bad option; the cluster's and the
// store's errors; Internal if a GET returns a value other than the one put.
Result<KvBenchResult> RunKvBench(const KvBenchOptions& options);

}  // namespace pulse::bench
