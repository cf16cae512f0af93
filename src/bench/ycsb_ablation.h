// The ablation ladder of seed 004 Fig. 18 on `pulse bench ycsb`'s tiered
// system: Base -> +double ring -> +swap -> +write buffer -> +RRPC, each rung
// adding one technique to the one before.  A rung whose technique is not
// built is listed with built = false and not measured; the others are each
// one RunYcsbBench of the tiered system alone (a cluster of their own, one
// after another: the machine's load between them is part of the
// difference).  What each measured rung does, in its `measures`:
//   Base          kv::Store on CPU nodes of the racks: rack-local buckets by
//                 loads and stores, other racks' offloaded (a message each);
//                 no swaps, no write buffer, no RRPC.
//   +swap         hot-page swaps (YcsbBenchOptions::swap): the other rack's
//                 pages a client uses move into its rack.
//   +write buffer ClientOptions::lock_tier.write_buffer on.  kv::Store takes
//                 no FarLock, so YCSB's writes are never buffered (counted:
//                 lock_buffered_writes_per_op): the same path as +swap.
//   +RRPC         (without swaps: the RRPC path does not follow a page
//                 that moved) GETs of another rack's buckets by RRPC in item mode
//                 (pulse/rpc_rrpc.h): one kRpcKvGet RPC (the 64-byte item
//                 inline, below the threshold), then the cached item
//                 address: one one-sided read, no message.
// Thread-safety: as RunYcsbBench (not reentrant).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/ycsb_bench.h"
#include "pulse/status.h"

namespace pulse::bench {

struct YcsbAblationRung {
  std::string name;      // "Base", "+double ring", "+swap", "+write buffer", "+RRPC"
  bool built = false;    // false: not measured (note says why)
  std::string measures;  // what the rung's run does, in words
  std::string note;
  bool swap = false, write_buffer = false, rrpc = false;  // the tiered options the rung runs with
  std::optional<YcsbSystemResult> result;  // the tiered system's, when built
  double load_average = 0;                 // 1-minute load average when it started
};

// The ladder for `options`' workload and scale (its systems are ignored:
// every rung runs "tiered").  Errors: the options' and each run's.
Result<std::vector<YcsbAblationRung>> RunYcsbAblation(const YcsbBenchOptions& options);

// {"workload", "distribution", "racks", ..., "rungs": [{"rung", "built",
// "measures", "note", "load_average_1m", <the system's figures>,
// "speedup_vs_base"}...]}.
nlohmann::json YcsbAblationJson(const YcsbBenchOptions& options, const std::vector<YcsbAblationRung>& rungs);

}  // namespace pulse::bench
