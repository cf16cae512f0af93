#include "bench/racked_cluster.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace pulse::bench {

std::string RackName(uint32_t i) { return std::string(1, static_cast<char>('a' + i)); }

Result<RackedCluster> StartRackedBenchCluster(BenchClusterOptions c, const RackTierOptions& tier) {
  if (c.ucx_tls.empty()) c.ucx_tls = "tcp";  // racks share no memory over UCX
  cluster::ClusterConfig config = BenchClusterConfig(c);
  std::vector<std::string>& switch_args = config.switch_node.extra_args;
  if (tier.page_bytes != 0) switch_args.insert(switch_args.end(), {"--page-bytes", std::to_string(tier.page_bytes)});
  if (tier.swaps) switch_args.insert(switch_args.end(), {"--swaps", "on"});
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
