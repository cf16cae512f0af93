#include "bench/racked_cluster.h"

#include <cstdlib>

namespace pulse::bench {

std::string RackName(uint32_t i) { return std::string(1, static_cast<char>('a' + i)); }

Result<RackedCluster> StartRackedBenchCluster(BenchClusterOptions c) {
  if (c.ucx_tls.empty()) c.ucx_tls = "tcp";  // racks share no memory over UCX
  cluster::ClusterConfig config = BenchClusterConfig(c);
  for (uint32_t i = 0; i < config.memnodes.size(); ++i) {
    config.memnodes[i].rack = RackName(i);
    config.memnodes[i].rack_tenants = {1};
  }
  PULSE_RETURN_IF_ERROR(cluster::ValidateClusterConfig(config));
  cluster::LaunchOptions lo;
  lo.die_with_parent = true;
  lo.progress = c.progress;
  PULSE_ASSIGN_OR_RETURN(cluster::ClusterState started, cluster::StartCluster(config, lo));
  RackedCluster out;
  out.switch_address = started.switch_address;
  out.transport = config.ucx_tls;
  out.guard = cluster::ClusterGuard(std::move(started), std::chrono::milliseconds(3000));
  cluster::ApplyTransportEnvironment(config);  // the CPU nodes speak what the nodes speak
  ::unsetenv("PULSE_RACK");                    // each client names its rack (or none)
  return out;
}

}  // namespace pulse::bench
