// A cluster of this host's own for a benchmark: a switch and memory nodes as
// child processes on free ports, stopped with the benchmark (they get
// SIGTERM if it dies).  Shared by the `pulse bench` commands that start one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cluster/launcher.h"
#include "pulse/status.h"

namespace pulse::bench {

struct BenchClusterOptions {
  std::string source;           // names the benchmark in messages, e.g. "pulse bench rpc"
  std::string name;             // run subdirectory and shm prefix, e.g. "bench-rpc-<pid>"
  std::string binary;           // the pulse executable (empty: this one)
  std::string run_dir;          // logs (empty: $PULSE_RUN_DIR, else "run")
  std::string ucx_tls;          // transports for the nodes (empty: UCX_TLS)
  uint32_t poll_window_us = 0;  // adaptive polling window of the nodes (0: the default)
  bool busy_poll = false;
  uint32_t memory_nodes = 2;
  uint64_t pool_mib = 64;
  std::function<void(const std::string&)> progress;
};

// Starts the cluster.  Errors as cluster::StartCluster.
Result<cluster::ClusterState> StartBenchCluster(const BenchClusterOptions& options);

}  // namespace pulse::bench
