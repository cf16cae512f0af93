// `pulse bench app`: one of the paper's applications (webservice,
// wiredtiger, btrdb) on one system (src/bench/app_systems.h), against a
// local cluster it starts (or one it joins), closed-loop and optionally
// open-loop, with the figures of seed 000 section 6 / seed 001 section 7.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/app_projection.h"
#include "bench/traverse_bench.h"
#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::bench {

struct AppBenchOptions {
  std::string app = "webservice";  // webservice | wiredtiger | btrdb
  std::string system = "pulse";
  uint32_t memory_nodes = 1;
  // Engine pipelines (threads) per memory node of a started cluster; 0:
  // the node's default ($PULSE_PIPELINES, else 1).
  uint32_t pipelines = 0;
  // The started cluster's engine, "interp" or "jit"; empty: the node's
  // default ($PULSE_ENGINE, else the JIT where the host has one).
  std::string engine;
  std::string switch_address;      // join this cluster; empty: start one
  // The started cluster's routing: "direct" or "switch" (every traversal
  // message through the switch, the paper's topology); empty: the cluster's
  // default (direct).  Ignored when joining a cluster.
  std::string routing;
  std::string run_dir, ucx_tls, binary;
  std::optional<ExecutionMode> mode;  // unset: the dispatch rule (the command defaults to kOffload)
  // Data-set size: users (webservice), records (wiredtiger), seconds of
  // readings (btrdb); 0: the quick default.
  uint64_t size = 0;
  char workload = 'C';             // webservice: A, B or C
  std::string distribution = "zipfian";  // webservice: zipfian or uniform
  uint32_t chain_length = 0;       // webservice: > 0 for the high-load-factor variant
  double seconds = 5;              // measured closed-loop phase
  uint32_t warmup_ops = 200;
  // Closed-loop clients, each a thread with its own system (Client) and its
  // own copy of the data, all measured over the same phase; the open-loop
  // phase uses the first.  More than one drives the memory nodes towards
  // saturation (the memory-node CPU target).
  uint32_t concurrency = 1;
  double rate = 0;                 // > 0: also an open-loop phase at this many requests/s
  uint64_t seed = 42;
  std::function<void(const std::string&)> progress;
  // The comparison systems' settings (src/bench/app_systems.h AppSystemConfig).
  double cache_fraction = 0.10;      // cache, cache-rpc: of the working set
  std::string cache_policy = "lru";  // cache: lru | clock
  std::string rpc_path = "direct";   // rpc*, cache-rpc: direct | switch
  double rpc_core_ghz = 1.0;         // rpc-wimpy: the emulated core
  // Adaptive polling windows (net::WorkerOptions::poll_window_us) of the
  // started cluster's nodes and of the clients (issue 14's wake-up study).
  // The nodes default to config/local.toml's [poll]: 50 us under the
  // idle-core rule (net::WorkerOptions::poll_when_core_idle).
  uint32_t node_poll_window_us = 50;
  bool node_poll_when_core_idle = true;
  uint32_t client_poll_window_us = net::kDefaultPollWindowUs;
  bool client_poll_when_core_idle = false;
  uint32_t client_awaiting_poll_window_us = net::kDefaultAwaitingPollWindowUs;
  // Sensitivity knobs of seed 000 appendix C (`pulse bench suite`).
  uint32_t scan_length = 0;              // wiredtiger: every scan reads this many records (0: YCSB E's 1..100)
  std::string allocation = "uniform";    // wiredtiger: uniform (round robin) | partitioned (needs >= 2 nodes)
  double insert_fraction = 0;            // webservice: fraction of requests inserting a new user
  bool offload_alloc = true;             // webservice: inserts carry pre-allocated regions (ALLOC offloaded)
  FabricModel fabric;                    // the rack projection's parameters (app_projection.h)
};

struct AppBenchPhase {
  uint64_t ops = 0;
  double seconds = 0;
  LatencyStats latency;
};

struct AppBenchResult {
  AppBenchPhase closed, open;
  bool has_open = false;
  double bytes_per_op = 0;
  std::optional<double> mn_cpu_us_per_op;
  // Wall time per operation on the memory nodes, by leg (their stats'
  // "legs_ns", summed over the nodes): "handle" (traversal messages decoded
  // and admitted), "queue_wait" (waiting for a workspace), "engine" (the
  // run), "send" (outbox flushes), "extension" (the rpc baselines' handlers
  // with their replies).  What p50 has beyond these is the network, the
  // wake-ups and the CPU node.
  std::map<std::string, double> memnode_leg_us_per_op;
  std::optional<double> energy_uj_per_op;  // RAPL package energy, where readable
  double offload_fraction = 0;
  double cross_node_per_op = 0;
  // The clients' sleeps on their event fd per operation (net::Counters::sleeps):
  // each one a wake-up of a sleeping process on the operation's path.
  double client_sleeps_per_op = 0;
  // Memory-node iterations per operation: engine iterations plus the nodes
  // the rpc systems' handlers visit (0 where traversals run at the CPU node).
  std::optional<double> iterations_per_op;
  double retransmissions_per_op = 0;
  // Critical-path accounting (docs/evaluation.md): the messages each
  // operation waited for (request, continuation, re-issue and response legs
  // of its traversals and RPCs; a hop via the switch is two; a one-sided
  // access two), their bytes, and the rack projection priced from them
  // (a model; absent without the memory-node CPU figure).
  double critical_path_messages_per_op = 0;
  double critical_path_bytes_per_op = 0;
  std::optional<double> projected_rack_us;
  // Message aggregation (include/pulse/message_batch.h) in the measured
  // phase: traversal requests per active message from the CPU nodes, and
  // responses and continuations per active message from the memory nodes
  // (absent where no traversal message was sent, e.g. the rpc systems).
  std::optional<double> requests_per_message;
  std::optional<double> responses_per_message;
  std::string extra;                        // application-specific figures (a JSON object)
  uint64_t verified = 0;                    // answers checked against the native computation
  uint64_t load_ops = 0;
  double load_seconds = 0;
  std::string switch_address;
  bool own_cluster = false;
};

Result<AppBenchResult> RunAppBench(const AppBenchOptions& options);

// One JSON object of a run: its configuration and every figure of the
// result (what `pulse bench app --json` prints; null for absent figures).
nlohmann::json AppBenchJson(const AppBenchOptions& options, const AppBenchResult& result);

}  // namespace pulse::bench
