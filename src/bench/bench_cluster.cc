#include "bench/bench_cluster.h"

#include <cstdlib>

namespace pulse::bench {

Result<cluster::ClusterState> StartBenchCluster(const BenchClusterOptions& o) {
  cluster::ClusterConfig c;
  c.source = o.source;
  c.name = o.name;
  const char* env_dir = std::getenv("PULSE_RUN_DIR");
  c.run_dir = !o.run_dir.empty() ? o.run_dir : env_dir != nullptr && *env_dir ? env_dir : "run";
  c.binary = o.binary;
  c.ucx_tls = o.ucx_tls;
  c.poll.window_us = o.poll_window_us;
  c.poll.busy = o.busy_poll;
  c.switch_node.role = cluster::Role::kSwitch;
  c.switch_node.port = 0;
  for (uint32_t i = 0; i < o.memory_nodes; ++i) {
    cluster::NodeConfig n;
    n.role = cluster::Role::kMemNode;
    n.node = i;
    n.port = 0;
    n.pool_mib = o.pool_mib;
    c.memnodes.push_back(n);
  }
  cluster::LaunchOptions lo;
  lo.die_with_parent = true;
  lo.progress = o.progress;
  return cluster::StartCluster(c, lo);
}

}  // namespace pulse::bench
