// A local cluster of racks for the tier benchmarks (docs/racks.md): memory
// node i is rack RackName(i)'s pool, offered to tenant 1; the transports
// share no memory between processes (tcp unless the options name others),
// and this process's UCX environment is set to match, so its CPU nodes
// reach the other racks over the fabric only.  `pulse bench ycsb` and
// `pulse bench tier-locks` start theirs with it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bench/bench_cluster.h"
#include "pulse/status.h"

namespace pulse::bench {

// Rack i's name: "a", "b", ...
std::string RackName(uint32_t i);

struct RackedCluster {
  std::string switch_address;
  std::string transport;        // the UCX transports in use
  cluster::ClusterGuard guard;  // stops the cluster (StopBenchCluster reports how)
};

// The page directory's settings for the switch (docs/tier.md).
struct RackTierOptions {
  uint64_t page_bytes = 0;  // the switch's --page-bytes; 0: its default (2 MB)
  bool swaps = false;       // the switch runs the hot-page swaps clients ask for (--swaps on)
};

// Starts `options.memory_nodes` racks.  $PULSE_RACK is unset: each client
// names its rack.  Errors: those of ValidateClusterConfig and StartCluster.
Result<RackedCluster> StartRackedBenchCluster(BenchClusterOptions options, const RackTierOptions& tier = {});

// The swap flags of a benchmark (`bench`: its name in the message):
// InvalidArgument naming --page-kib (not a page size of the directory:
// tier::PageGeometry::Make) or --hot-threshold (not a number >= 0), else Ok.
Status CheckSwapFlags(std::string_view bench, uint64_t page_bytes, double hot_threshold);

// The switch's swap counters (its stats' counters.swaps: finished,
// outcomes, queued, ...); an empty object if it runs no swaps.  With
// `drain`, first waits (up to 30 s) until no swap is queued or running, so
// the swaps a run asked for are counted.  `ucx_tls`: this process's
// transports (empty: UCX_TLS).  Errors: the stats call's.
Result<nlohmann::json> SwapCounters(const std::string& ucx_tls, const std::string& switch_address, bool drain);

// after - before, per outcome, of two SwapCounters answers (outcomes that
// did not grow are left out).
std::map<std::string, uint64_t> SwapOutcomesBetween(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace pulse::bench
