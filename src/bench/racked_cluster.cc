#include "bench/racked_cluster.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cluster/control_session.h"
#include "pulse/tier/page_address.h"

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

Status CheckSwapFlags(std::string_view bench, uint64_t page_bytes, double hot_threshold) {
  if (Result<tier::PageGeometry> g = tier::PageGeometry::Make(page_bytes); !g.ok())
    return Status::InvalidArgument(fmt::format("{}: --page-kib {}: {}", bench, page_bytes / 1024, g.status().message()));
  if (!(hot_threshold >= 0 && hot_threshold < 1e9))
    return Status::InvalidArgument(fmt::format("{}: --hot-threshold {} is not a number >= 0", bench, hot_threshold));
  return Status::Ok();
}

Result<nlohmann::json> SwapCounters(const std::string& ucx_tls, const std::string& switch_address, bool drain) {
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<cluster::ControlSession> session, cluster::ControlSession::Create(ucx_tls));
  // A swap takes milliseconds; the bound is for a switch that stopped
  // running them.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    PULSE_ASSIGN_OR_RETURN(nlohmann::json stats, session->Call(switch_address, "stats", std::chrono::seconds(5)));
    nlohmann::json swaps = stats.value("counters", nlohmann::json::object()).value("swaps", nlohmann::json::object());
    if (!drain || swaps.value("queued", uint64_t{0}) == 0 || std::chrono::steady_clock::now() > deadline) return swaps;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::map<std::string, uint64_t> SwapOutcomesBetween(const nlohmann::json& before, const nlohmann::json& after) {
  const nlohmann::json was = before.value("outcomes", nlohmann::json::object());
  const nlohmann::json now = after.value("outcomes", nlohmann::json::object());
  std::map<std::string, uint64_t> grown;
  for (const auto& [outcome, count] : now.items()) {
    const uint64_t n = count.get<uint64_t>(), w = was.value(outcome, uint64_t{0});
    if (n > w) grown[outcome] = n - w;
  }
  return grown;
}

}  // namespace pulse::bench
