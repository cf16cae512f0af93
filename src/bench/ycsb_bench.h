// `pulse bench ycsb` (issue 16, seed 004 section 6.4): a hash-table KV store
// under YCSB A, B, C, D and F on a local cluster of racks, on four systems:
//
//   tiered      pulse::kv::Store on CPU nodes of the racks (ClientOptions::
//               rack): the store's partitions are spread over the racks' memory
//               nodes (one per rack); a GET or PUT whose bucket is in the
//               client's rack runs at the CPU node by loads and stores through
//               the mapped pool (LocalExecution), the others are offloaded.
//   all-local   the same with every partition in rack "a"'s pool and every
//               client in rack "a" (the upper bound: no remote access).
//   object-rpc  FaRM-like: every access an RPC to the memory node owning the
//               bucket (the native handlers kRpcKvGet, kRpcKvPut through
//               rpc::KvStoreRunner), clients without a rack.
//   paging      Fastswap-like: clients without a rack (Fastswap has no CXL
//               tier), each with a cache of whole 4 KB pages (LRU, write-back;
//               ycsb_paging.h) sized to a fraction of its store; the store's
//               GET program runs at the CPU node (reference interpreter), so
//               every bucket and item it touches is read from a cached page or
//               faults the whole page in; an update writes the value into the
//               cached page (the item's address from the GET's final state).
//               Inserts (D) are refused.
//   object-rpc with rrpc_threshold: every value is an RRPC object
//               (pulse/rpc_rrpc.h) of --value-bytes, allocated on the memory
//               node of its key's bucket, and a GET is RrpcKv::Get.
//
// Each client (a Client in a thread of its own, `clients` per rack) owns one
// store (kv::Store is single-writer) loaded with the same `records` records,
// and runs its own YCSB stream; every read is checked against the value the
// client last wrote for that key.
//
// Hot-page swaps (`swap`, docs/tier.md "Moving pages"): the switch runs
// with `--swaps on` and pages of `page_bytes`, and the rack clients ask for
// the other racks' pages they use (seed 004's hotness, H_p =
// `hot_threshold`); pages move with their allocations, so a client's later
// operations on them run in its rack.  With swap off the clients count
// nothing and ask for nothing.  A client's slabs are whole pages either
// way, so no page holds two clients' data.
//
// Thread-safety: RunYcsbBench is not reentrant (it sets UCX_TLS and unsets
// PULSE_RACK in the environment).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/traverse_bench.h"  // LatencyStats
#include "bench/ycsb_workload.h"
#include "pulse/status.h"

namespace pulse::bench {

struct YcsbBenchOptions {
  YcsbWorkloadOptions workload;
  std::vector<std::string> systems = {"tiered"};  // tiered | all-local | object-rpc | paging
  uint32_t racks = 2;          // one memory node per rack, racks "a", "b", ...
  uint32_t clients = 2;        // per rack
  uint64_t ops = 20000;        // measured operations of each system, all clients together
  uint64_t warmup = 500;       // unmeasured operations per client first
  double page_cache_ratio = 0.25;  // paging: the cache's bytes / the store's far bytes
  bool swap = false;           // hot-page swaps (above)
  double hot_threshold = 4;    // H_p of the clients' hotness (seed 004's default)
  uint64_t page_bytes = 2 << 20;  // the page directory's pages (the switch's --page-bytes)
  // RDMA-optimised RPC (pulse/rpc_rrpc.h), when set: object-rpc stores each
  // value as an RRPC object (any --value-bytes) and its GETs come back
  // inline up to this many bytes, else by address and a one-sided read;
  // the address of each key is cached after first use (rrpc_cache).
  std::optional<uint32_t> rrpc_threshold;
  bool rrpc_cache = true;
  // The tiered system's seed-004 techniques, switched for the ablation
  // ladder (ycsb_ablation.h): the write buffer under locks
  // (ClientOptions::lock_tier.write_buffer), and RRPC in item mode
  // (pulse/rpc_rrpc.h) for GETs whose bucket is in another rack.
  bool tiered_write_buffer = true;
  bool tiered_rrpc = false;
  uint32_t pool_mib = 256;     // each memory node's pool
  std::string binary, run_dir;
  std::string ucx_tls;         // empty: tcp (racks share no memory over UCX)
  std::function<void(const std::string&)> progress;
};

struct YcsbSystemResult {
  std::string system;
  uint32_t clients = 0;
  uint64_t ops = 0, reads = 0, updates = 0, inserts = 0, read_modify_writes = 0;
  uint64_t verified_reads = 0;  // reads whose value was checked
  double seconds = 0;           // first client's start to last client's end
  double throughput_ops = 0;
  LatencyStats latency;         // per operation (a read-modify-write is one)
  double messages_per_op = 0;   // active messages the clients sent
  double one_sided_per_op = 0;  // one-sided (RMA) operations the clients started
  double offloaded_per_op = 0;  // traversals sent to memory nodes
  // Store operations that ran entirely in the client's rack (no message, no
  // one-sided operation) / all store operations; 0 for clients without a rack.
  double local_rack_fraction = 0;
  double page_cache_hit_ratio = 0;  // paging: cached blocks found / looked up
  uint64_t page_cache_bytes = 0;    // paging: the cache's budget per client
  double page_uncached_per_op = 0;  // paging: windows of pages that could not be read whole
  // object-rpc with RRPC: per GET, the replies that carried the payload,
  // those that carried its address (then one one-sided read), the GETs a
  // cached address served alone, and cached addresses refused as stale.
  double rrpc_inline_per_op = 0, rrpc_address_per_op = 0, rrpc_cached_per_op = 0;
  uint64_t rrpc_stale = 0;
  double lock_buffered_writes_per_op = 0;  // writes the lock tier's write buffer took
  // Hot pages, over the system's whole run (load, warm-up and measured
  // operations): the clients' swap requests (those the switch queued), the
  // accesses that waited for a page to move, and the switch's swaps
  // finished, by outcome ("swapped", "moved", "rejected", ...).
  uint64_t swap_requests = 0, page_move_waits = 0;
  uint64_t swaps_finished = 0;
  std::map<std::string, uint64_t> swap_outcomes;
};

struct YcsbBenchResult {
  std::vector<YcsbSystemResult> systems;
  std::string transport;
  double load_average = 0;
  nlohmann::json ToJson(const YcsbBenchOptions& options) const;
};

// InvalidArgument naming a bad option (a system object-rpc or paging cannot
// run: FailedPrecondition), else Ok.
Status CheckYcsbBenchOptions(const YcsbBenchOptions& options);

// Starts the cluster, runs each system in turn and stops it.  Errors: bad
// options, the cluster's, a client's or store's error, Internal if a read
// returned another value than the client last wrote.
Result<YcsbBenchResult> RunYcsbBench(const YcsbBenchOptions& options);

}  // namespace pulse::bench
