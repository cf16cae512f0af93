// `pulse bench rpc`: pulse offload against the RPC baselines on the same
// structures in one run.  A local cluster (two memory nodes by default,
// started here) holds a pulse::ds UnorderedMap, BTree and List spread over
// the nodes (by default uniformly, object after object, so that most
// pointers cross nodes; or all on node 0).
// For each operation (umap_find, btree_lower_bound, btree_aggregate,
// list_aggregate) and each system:
//   pulse       the structure's offloaded traversal (switch continuations)
//   rpc         the native handler on the memory nodes' CPUs, re-issued by
//               the CPU node at each node boundary (include/pulse/rpc.h)
//   rpc-wimpy   the same, stretched to the nodes' --rpc-core-ghz
// the requests run in blocks, the systems taking turns block by block over
// several rounds, on the same key sequence; every answer is checked against
// the other systems'.  Reported: latency (median, mean, p99), node crossings
// per operation, and memory-node CPU time per operation (process CPU time of
// all memory nodes over the system's blocks, from their stats; and, for the
// RPC systems, the handlers' own time).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/traverse_bench.h"
#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::bench {

struct RpcBenchOptions {
  std::string binary;           // the pulse executable for the cluster (empty: this one)
  std::string run_dir;          // its logs (empty: $PULSE_RUN_DIR, else "run")
  std::string ucx_tls;          // transports for the nodes and the client (empty: UCX_TLS)
  // Nodes and client: adaptive polling window.  0: the nodes sleep at once
  // (config/local.toml's setting for a shared 2-core host) and the client
  // polls net::kDefaultPollWindowUs.
  uint32_t poll_window_us = 0;
  uint32_t memory_nodes = 2;
  // Object placement: kUniform spreads consecutive objects over the nodes
  // (most pointers cross nodes); kLocalFirst keeps everything on node 0 (no
  // crossings: the single-node comparison).
  AllocationPolicy policy = AllocationPolicy::kUniform;
  uint64_t map_keys = 20000;    // UnorderedMap entries
  uint32_t chain = 8;           // mean chain length (buckets = map_keys / chain)
  uint64_t tree_keys = 20000;   // BTree entries
  uint64_t range_keys = 1000;   // btree_aggregate's range width in keys
  uint32_t list_length = 64;    // List elements (list_aggregate walks all)
  uint32_t samples = 1000;      // measured operations per figure, over all rounds
  uint32_t rounds = 5;
  std::vector<std::string> operations;  // empty: all
  std::function<void(const std::string&)> progress;
};

struct RpcBenchFigure {
  std::string operation, system;
  LatencyStats latency;
  double crossings_per_op = 0;   // memory-node changes per operation (rpc: re-issues)
  double node_cpu_us_per_op = 0; // memory nodes' process CPU time per operation
  double node_exec_us_per_op = 0;  // rpc: handler time on the nodes (slowdown included)
};

struct RpcBenchResult {
  std::vector<RpcBenchFigure> figures;
  std::vector<double> host_ghz;  // per memory node, as calibrated at start
  double core_ghz = 0;           // the emulated wimpy core
  uint32_t memory_nodes = 0;
  std::string policy;
  uint64_t verified = 0;         // answers checked against another system's
  std::string transport;
  double load_average = 0;
};

// Errors: the cluster could not be started, an operation failed, or two
// systems gave different answers (Internal naming both).
Result<RpcBenchResult> RunRpcBench(const RpcBenchOptions& options);

}  // namespace pulse::bench
