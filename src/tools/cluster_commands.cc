// pulse cluster up | down | status: a local cluster of separate processes
// (one switch, N memory nodes) described by a TOML file; see docs/cluster.md.
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cluster/config.h"
#include "cluster/launcher.h"
#include "cluster/status.h"
#include "tools/commands.h"

namespace pulse::tools {
namespace {

struct ClusterArgs {
  std::string config;  // empty: the default (config/local.toml or the embedded copy)
  std::string state;   // empty: the config's state file
  bool json = false;
  bool check = false;  // status: problems (a full pool) fail too
  uint32_t timeout_ms = 2000;
};

[[noreturn]] void Fail(const std::string& command, const Status& s) {
  std::cerr << "pulse cluster " << command << ": " << s.message() << "\n";
  throw CLI::RuntimeError(1);
}

void AddConfigFlag(CLI::App* cmd, ClusterArgs* args) {
  cmd->add_option("--config", args->config,
                  "Cluster description (TOML); default: config/local.toml in the current directory,\n"
                  "else the copy embedded in this binary");
}

// The state file `down`/`status` act on.
std::string StateFileOf(const std::string& command, const ClusterArgs& args) {
  if (!args.state.empty()) return args.state;
  auto config = cluster::LoadClusterConfigOrDefault(args.config);
  if (!config.ok()) Fail(command, config.status());
  return config->StateFile();
}

void RunUp(const ClusterArgs& args) {
  auto config = cluster::LoadClusterConfigOrDefault(args.config);
  if (!config.ok()) Fail("up", config.status());
  cluster::LaunchOptions options;
  options.progress = [](const std::string& line) { std::cerr << "[cluster up] " << line << std::endl; };
  std::cerr << "[cluster up] " << config->source << ": switch + " << config->memnodes.size()
            << " memory nodes, logs in " << config->ClusterDir() << std::endl;
  auto state = cluster::StartCluster(*config, options);
  if (!state.ok()) Fail("up", state.status());
  std::cout << fmt::format("cluster '{}' is up (switch at {})\n", state->name, state->switch_address);
  std::cout << fmt::format("{:<11} {:<8} {:<21} {:>7}  {}\n", "node", "role", "address", "pid", "log");
  for (const auto& n : state->nodes)
    std::cout << fmt::format("{:<11} {:<8} {:<21} {:>7}  {}\n", n.name, cluster::RoleName(n.role), n.address,
                             n.process.pid, n.log);
  std::cout << "stop it with: pulse cluster down" << (args.config.empty() ? "" : " --config " + args.config)
            << std::endl;
}

void RunDown(const ClusterArgs& args) {
  const std::string path = StateFileOf("down", args);
  auto state = cluster::ReadState(path);
  if (!state.ok()) {
    if (state.status().code() == Status::Code::kNotFound) {
      std::cout << "no cluster is running (no state file at " << path << ")\n";
      return;
    }
    Fail("down", state.status());
  }
  uint32_t stage_ms = 5000;
  if (auto config = cluster::LoadClusterConfigOrDefault(args.config); config.ok())
    stage_ms = static_cast<uint32_t>(config->stop_timeout.count());
  auto stopped = cluster::StopCluster(*state, std::chrono::milliseconds(stage_ms));
  if (!stopped.ok()) Fail("down", stopped.status());
  for (const auto& o : *stopped) std::cout << fmt::format("{:<11} {}\n", o.name, o.how);
  std::cout << fmt::format("cluster '{}' is down\n", state->name);
}

void RunStatus(const ClusterArgs& args) {
  const std::string path = StateFileOf("status", args);
  auto state = cluster::ReadState(path);
  if (!state.ok()) {
    if (state.status().code() != Status::Code::kNotFound) Fail("status", state.status());
    if (args.json)
      std::cout << nlohmann::json{{"state_file", path}, {"healthy", false}, {"nodes", nlohmann::json::array()}}.dump(2)
                << std::endl;
    else
      std::cout << "no cluster is running (no state file at " << path << ")\n";
    throw CLI::RuntimeError(1);
  }
  auto nodes = cluster::QueryStatus(*state, std::chrono::milliseconds(args.timeout_ms));
  if (args.json)
    std::cout << cluster::StatusJson(*state, nodes).dump(2) << std::endl;
  else
    std::cout << cluster::StatusTable(*state, nodes);
  if (!cluster::Healthy(nodes)) throw CLI::RuntimeError(1);
  if (args.check && !cluster::Problems(nodes).empty()) throw CLI::RuntimeError(1);
}

}  // namespace

void AddClusterCommands(CLI::App& app) {
  CLI::App* cluster = app.add_subcommand("cluster", "Start, stop and inspect a local cluster (switch + memory nodes)");
  cluster->require_subcommand(1);
  cluster->footer(
      "The cluster is described by a TOML file (docs/cluster.md).  Logs and the state file are\n"
      "written to <run_dir>/<name>/ ($PULSE_RUN_DIR replaces run_dir).");

  auto up = std::make_shared<ClusterArgs>();
  CLI::App* cmd = cluster->add_subcommand(
      "up", "Start the switch and the memory nodes detached, wait until each answers, print them");
  AddConfigFlag(cmd, up.get());
  cmd->callback([up] { RunUp(*up); });

  auto down = std::make_shared<ClusterArgs>();
  cmd = cluster->add_subcommand(
      "down", "Stop the cluster: `shutdown` to each node, then SIGTERM, then SIGKILL (idempotent)");
  AddConfigFlag(cmd, down.get());
  cmd->add_option("--state", down->state, "State file of the cluster (default: the config's)");
  cmd->callback([down] { RunDown(*down); });

  auto status = std::make_shared<ClusterArgs>();
  cmd = cluster->add_subcommand(
      "status",
      "Per node: role, address, alive, and its counters; pool use per tenant (session and durable);\n"
      "problems such as a full pool; exit 1 unless every node answers");
  AddConfigFlag(cmd, status.get());
  cmd->add_option("--state", status->state, "State file of the cluster (default: the config's)");
  cmd->add_flag("--json", status->json, "Print one JSON object");
  cmd->add_flag("--check", status->check,
                "Exit 1 also when a problem is reported (a memory node's pool is full: under 5% free)");
  cmd->add_option("--timeout-ms", status->timeout_ms, "How long to wait for each node's answer")
      ->capture_default_str();
  cmd->callback([status] { RunStatus(*status); });
}

}  // namespace pulse::tools
