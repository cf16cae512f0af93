#include "bench/bench_cluster.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace pulse::bench {

cluster::ClusterConfig BenchClusterConfig(const BenchClusterOptions& o) {
  cluster::ClusterConfig c = cluster::LocalClusterConfig(o.name, o.memory_nodes, o.pool_mib, o.run_dir);
  c.binary = o.binary;
  c.ucx_tls = o.ucx_tls;
  c.poll.window_us = o.poll_window_us;
  c.poll.when_core_idle = o.poll_when_core_idle;
  c.poll.busy = o.busy_poll;
  if (!o.routing.empty()) c.routing = o.routing;
  for (cluster::NodeConfig& n : c.memnodes) {
    n.pipelines = o.pipelines;
    n.engine = o.engine;
  }
  if (o.agent_flags) {
    cluster::NodeConfig a;
    a.role = cluster::Role::kAgent;
    a.port = 0;
    a.agent_flags = *o.agent_flags;
    c.agent = a;
  }
  return c;
}

Result<cluster::ClusterState> StartBenchCluster(const BenchClusterOptions& o) {
  cluster::ClusterConfig c = BenchClusterConfig(o);
  cluster::LaunchOptions lo;
  lo.die_with_parent = true;
  lo.progress = o.progress;
  return cluster::StartCluster(c, lo);
}

Result<std::string> StartOrJoinBenchCluster(const BenchClusterOptions& o,
                                            const std::string& switch_address,
                                            cluster::ClusterGuard* guard) {
  if (!switch_address.empty()) {
    if (!o.ucx_tls.empty()) setenv("UCX_TLS", o.ucx_tls.c_str(), 1);
    return switch_address;
  }
  auto st = StartBenchCluster(o);
  if (!st.ok()) return st.status();
  const std::string address = st->switch_address;
  *guard = cluster::ClusterGuard(std::move(*st), std::chrono::milliseconds(3000));
  return address;
}

Status StopBenchCluster(cluster::ClusterGuard& guard) {
  if (guard.state() == nullptr) return Status::Ok();
  const std::string dir = std::filesystem::path(guard.state()->state_file).parent_path();
  auto stopped = guard.Stop();
  if (!stopped.ok()) return stopped.status();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // the logs of a run that went well
  return Status::Ok();
}

Status ForEachMemNodeStats(cluster::ControlSession& s, const std::string& switch_address,
                           const std::function<Status(const std::string& address, const nlohmann::json& stats)>& each) {
  PULSE_ASSIGN_OR_RETURN(nlohmann::json stats, s.Call(switch_address, "stats", std::chrono::seconds(2)));
  for (const nlohmann::json& n : stats["memnodes"]) {
    const std::string address = n.value("address", "");
    PULSE_ASSIGN_OR_RETURN(nlohmann::json m, s.Call(address, "stats", std::chrono::seconds(2)));
    PULSE_RETURN_IF_ERROR(each(address, m));
  }
  return Status::Ok();
}

Result<uint64_t> MemNodeCpuUsOf(const std::string& address, const nlohmann::json& stats) {
  if (!stats.contains("counters") || !stats["counters"].contains("cpu_us"))
    return Status::FailedPrecondition("memory node " + address + " reports no cpu_us");
  return stats["counters"]["cpu_us"].get<uint64_t>();
}

Result<uint64_t> MemNodeCpuUs(cluster::ControlSession& s, const std::string& switch_address) {
  uint64_t cpu = 0;
  PULSE_RETURN_IF_ERROR(ForEachMemNodeStats(s, switch_address, [&](const std::string& address, const nlohmann::json& m) {
    PULSE_ASSIGN_OR_RETURN(uint64_t node_cpu, MemNodeCpuUsOf(address, m));
    cpu += node_cpu;
    return Status::Ok();
  }));
  return cpu;
}

Result<uint64_t> SwitchForwards(cluster::ControlSession& session, const std::string& address) {
  auto stats = session.Call(address, "stats", std::chrono::seconds(2));
  if (!stats.ok()) return stats.status();
  return (*stats)["counters"].value("forwards", uint64_t{0});
}

Result<uint64_t> Continuations(cluster::ControlSession& session, const std::string& switch_address) {
  auto stats = session.Call(switch_address, "stats", std::chrono::seconds(2));
  if (!stats.ok()) return stats.status();
  uint64_t n = (*stats)["counters"].value("forwards", uint64_t{0});
  for (const auto& m : (*stats).value("memnodes", nlohmann::json::array())) {
    if (!m.value("alive", false)) continue;
    auto node = session.Call(m.value("address", std::string()), "stats", std::chrono::seconds(2));
    if (!node.ok()) return node.status();
    n += (*node)["counters"].value("direct_continuations", uint64_t{0});
  }
  return n;
}

}  // namespace pulse::bench
