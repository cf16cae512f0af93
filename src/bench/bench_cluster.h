// A local cluster a benchmark starts for itself (switch + memory nodes as
// child processes on free ports, killed if the benchmark dies).  Shared by
// `pulse bench traverse` and `pulse bench app`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cluster/launcher.h"
#include "pulse/status.h"

namespace pulse::bench {

struct BenchClusterOptions {
  std::string name;            // cluster name prefix (the pid is appended)
  std::string source;          // what started it, for the state file
  uint32_t memory_nodes = 2;
  uint64_t pool_mib = 64;      // per memory node
  std::string binary;          // the pulse executable (empty: this one)
  std::string run_dir;         // logs (empty: $PULSE_RUN_DIR, else "run")
  std::string ucx_tls;         // transports (empty: UCX_TLS)
  uint32_t poll_window_us = 0;
  bool busy_poll = false;
  std::function<void(const std::string&)> progress;
};

// Starts the cluster; errors as cluster::StartCluster.
Result<cluster::ClusterState> StartBenchCluster(const BenchClusterOptions& options);

// With an empty `switch_address`: starts the cluster of `options`, which
// *guard then owns; otherwise joins that switch (setting UCX_TLS to
// options.ucx_tls if given).  Returns the switch address to connect to.
Result<std::string> StartOrJoinBenchCluster(const BenchClusterOptions& options, const std::string& switch_address,
                                            cluster::ClusterGuard* guard);
// Stops a cluster *guard owns (if any) and removes its logs: a run that went
// well leaves nothing behind.  Errors as cluster::StopCluster.
Status StopBenchCluster(cluster::ClusterGuard* guard);

}  // namespace pulse::bench
