// What the cluster benchmarks (`pulse bench traverse`, `pulse bench ds`)
// share: starting a local cluster of memory nodes on free ports, reading the
// switch's forward counter, and stopping the cluster (removing its logs when
// the run went well).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster/control_session.h"
#include "cluster/launcher.h"
#include "pulse/status.h"

namespace pulse::bench {

struct BenchClusterOptions {
  std::string name;             // e.g. "bench-traverse"; the pid is appended
  std::string binary;           // the pulse executable (empty: this one)
  std::string run_dir;          // logs (empty: $PULSE_RUN_DIR, else "run")
  std::string ucx_tls;          // transports (empty: UCX_TLS)
  uint32_t poll_window_us = 0;  // adaptive polling window of the nodes
  bool poll_when_core_idle = false;  // ... under the idle-core rule (cluster::PollConfig::when_core_idle)
  bool busy_poll = false;
  uint32_t memory_nodes = 2;
  uint32_t pool_mib = 64;
  std::string routing;          // "direct" or "switch"; empty: the cluster's default
  uint32_t pipelines = 0;       // engine pipelines per memory node; 0: the node's default
  std::string engine;           // "interp" or "jit" on every memory node; empty: the node's default
  // Set: the cluster also runs the offload agent (`pulse agent`, on a free
  // port) with these flags, e.g. "--mode proxy" (`pulse bench graph`).
  std::optional<std::string> agent_flags;
  std::function<void(const std::string&)> progress;
};

// Options named `name` with what every benchmark's options give the same way
// (fields binary, run_dir, ucx_tls, progress); the caller adds the rest.
template <typename BenchOptions>
BenchClusterOptions BenchClusterOptionsFor(const std::string& name, const BenchOptions& o) {
  BenchClusterOptions c;
  c.name = name;
  c.binary = o.binary;
  c.run_dir = o.run_dir;
  c.ucx_tls = o.ucx_tls;
  c.progress = o.progress;
  return c;
}

// The config StartBenchCluster starts (for a benchmark that adds to it,
// e.g. environment for the nodes, before cluster::StartCluster).
cluster::ClusterConfig BenchClusterConfig(const BenchClusterOptions& options);

// Starts a switch and `memory_nodes` memory nodes on this host, on free
// ports, that die with this process.  Errors: those of StartCluster.
Result<cluster::ClusterState> StartBenchCluster(const BenchClusterOptions& options);

// With an empty `switch_address`: starts the cluster of `options`, which
// *guard then owns; otherwise joins that switch (setting UCX_TLS to
// options.ucx_tls if given).  Returns the switch address to connect to.
Result<std::string> StartOrJoinBenchCluster(const BenchClusterOptions& options,
                                            const std::string& switch_address,
                                            cluster::ClusterGuard* guard);

// Stops a cluster started by StartBenchCluster (if guard holds one) and
// removes its run directory.  Errors: a node did not stop.
Status StopBenchCluster(cluster::ClusterGuard& guard);

// Calls `each` with the address and the `stats` answer of every memory node
// the switch lists, in its order.  Errors: those of the calls, or the first
// error `each` returns (which stops the walk).
Status ForEachMemNodeStats(cluster::ControlSession& session, const std::string& switch_address,
                           const std::function<Status(const std::string& address, const nlohmann::json& stats)>& each);

// One memory node's CPU time so far, in microseconds, from its `stats`
// answer.  FailedPrecondition naming `address` if it reports no cpu_us.
Result<uint64_t> MemNodeCpuUsOf(const std::string& address, const nlohmann::json& stats);

// The memory nodes' CPU time so far, in microseconds: MemNodeCpuUsOf of
// every memory node the switch lists, summed.  Errors: those of
// ForEachMemNodeStats and MemNodeCpuUsOf.
Result<uint64_t> MemNodeCpuUs(cluster::ControlSession& session, const std::string& switch_address);

// The switch's count of continuations forwarded between memory nodes.
Result<uint64_t> SwitchForwards(cluster::ControlSession& session, const std::string& address);
// Continuations between memory nodes so far, whichever way they went: the
// switch's `forwards` plus every live memory node's `direct_continuations`
// (direct routing), the nodes found in the switch's stats.
Result<uint64_t> Continuations(cluster::ControlSession& session, const std::string& switch_address);

}  // namespace pulse::bench
