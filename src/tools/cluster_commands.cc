// pulse cluster up | down | status | restart | pools | clean: a local
// cluster of separate processes (one switch, N memory nodes) described by a
// TOML file; see docs/cluster.md.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster/config.h"
#include "cluster/keys.h"
#include "cluster/launcher.h"
#include "cluster/pools.h"
#include "cluster/status.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

struct ClusterArgs {
  std::string config;  // empty: the default (config/local.toml or the embedded copy)
  std::string state;   // empty: the config's state file
  bool json = false;
  bool check = false;  // status: problems (a full pool) fail too
  uint32_t timeout_ms = 2000;
  std::vector<std::string> nodes;  // restart: the nodes to restart (empty: every dead one)
  bool all = false;                // clean: every unused pulse pool on the host
  bool dry_run = false;            // clean: list only
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

// A subcommand acting on the cluster of a state file: --config, --state,
// and `run` as its callback.
CLI::App* AddStateCommand(CLI::App* cluster, const std::string& name, const std::string& help,
                          const std::shared_ptr<ClusterArgs>& args, void (*run)(const ClusterArgs&)) {
  CLI::App* cmd = cluster->add_subcommand(name, help);
  AddConfigFlag(cmd, args.get());
  cmd->add_option("--state", args->state, "State file of the cluster (default: the config's)");
  cmd->callback([args, run] { run(*args); });
  return cmd;
}

// The state file `down`/`status` act on.
// Also hands this process the cluster's secret (the control session proves it).
std::string StateFileOf(const std::string& command, const ClusterArgs& args) {
  auto config = cluster::LoadClusterConfigOrDefault(args.config);
  if (!args.state.empty()) {
    cluster::ClusterConfig next_to_state;  // the default secret next to the state file
    next_to_state.run_dir = std::filesystem::path(args.state).parent_path().parent_path().string();
    next_to_state.name = std::filesystem::path(args.state).parent_path().filename().string();
    cluster::UseClusterSecret(config.ok() && config->StateFile() == args.state ? *config : next_to_state);
    return args.state;
  }
  if (!config.ok()) Fail(command, config.status());
  cluster::UseClusterSecret(*config);
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

// The config a command acts on, and the cluster of its state file if there
// is one.
struct Target {
  cluster::ClusterConfig config;
  std::string state_file;
  std::optional<cluster::ClusterState> state;
};

Target LoadTarget(const std::string& command, const ClusterArgs& args) {
  auto config = cluster::LoadClusterConfigOrDefault(args.config);
  if (!config.ok()) Fail(command, config.status());
  Target t{*config, args.state.empty() ? config->StateFile() : args.state, std::nullopt};
  auto state = cluster::ReadState(t.state_file);
  if (state.ok())
    t.state = std::move(*state);
  else if (state.status().code() != Status::Code::kNotFound)
    Fail(command, state.status());
  return t;
}

void RunRestart(const ClusterArgs& args) {
  Target t = LoadTarget("restart", args);
  if (!t.state)
    Fail("restart", Status::NotFound(fmt::format(
                        "no cluster to restart (no state file at {}); start one with `pulse cluster up`", t.state_file)));
  const cluster::ClusterConfig* config = &t.config;
  cluster::ClusterState* state = &*t.state;
  cluster::LaunchOptions options;
  options.progress = [](const std::string& line) { std::cerr << "[cluster restart] " << line << std::endl; };
  auto restarted = cluster::RestartDeadNodes(*config, state, args.nodes, options);
  // Whatever was restarted runs now: the state file must name it, also on failure.
  if (Status s = cluster::WriteState(*state); !s.ok()) Fail("restart", s);
  if (!restarted.ok()) Fail("restart", restarted.status());
  for (const auto& o : *restarted) std::cout << fmt::format("{:<11} {}\n", o.name, o.how);
  std::cout << fmt::format("cluster '{}' runs (switch at {})\n", state->name, state->switch_address);
}

// The pools `clean` may remove: unused, not recorded in the state file
// (those are `down`'s and `restart`'s), and this cluster's (its name prefix
// or a pool name its config sets) unless --all.
std::vector<cluster::PoolInfo> OrphanedPools(const ClusterArgs& args, std::string* scope) {
  const Target t = LoadTarget("clean", args);
  const cluster::ClusterConfig* config = &t.config;
  std::set<std::string> recorded, configured;
  if (t.state)
    for (const auto& n : t.state->nodes) recorded.insert(n.shm_name);
  for (const auto& n : config->memnodes)
    if (!n.shm_name.empty()) configured.insert(n.shm_name);
  const std::string prefix = fmt::format("{}{}-", cluster::kPoolPrefix, config->name);
  *scope = args.all ? fmt::format("every pool named {}* on this host", cluster::kPoolPrefix)
                    : fmt::format("the pools of cluster '{}' ({}*)", config->name, prefix);
  auto pools = cluster::ListPools("/");
  if (!pools.ok()) Fail("clean", pools.status());
  std::vector<cluster::PoolInfo> out;
  for (auto& p : *pools) {
    const bool ours = p.name.starts_with(prefix) || configured.count(p.name) != 0;
    const bool pulse = p.name.starts_with(cluster::kPoolPrefix) || configured.count(p.name) != 0;
    if (p.use.in_use || recorded.count(p.name) != 0 || !(args.all ? pulse : ours)) continue;
    out.push_back(std::move(p));
  }
  return out;
}

void RunPools(const ClusterArgs& args) {
  const Target t = LoadTarget("pools", args);
  std::map<std::string, std::string> recorded;  // pool -> node of this cluster
  if (t.state)
    for (const auto& n : t.state->nodes)
      if (!n.shm_name.empty()) recorded[n.shm_name] = fmt::format("{} of '{}'", n.name, t.state->name);
  auto pools = cluster::ListPools();
  if (!pools.ok()) Fail("pools", pools.status());
  for (const auto& [name, node] : recorded)
    if (!args.json && !cluster::PoolUseOf(name).exists) std::cout << fmt::format("{} ({}): gone\n", name, node);
  if (pools->empty() && !args.json) std::cout << fmt::format("no pool named {}* on this host\n", cluster::kPoolPrefix);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : *pools) {
    const auto it = recorded.find(p.name);
    const std::string owner = it != recorded.end() ? it->second : "";
    const std::string use = p.use.in_use ? (p.use.user > 0 ? fmt::format("in use by pid {}", p.use.user) : "in use")
                            : !owner.empty() ? "unused: `pulse cluster restart` re-attaches it, `down` removes it"
                                             : "orphaned: `pulse cluster clean` removes it";
    list.push_back({{"name", p.name}, {"bytes", p.use.bytes}, {"in_use", p.use.in_use}, {"user_pid", p.use.user},
                    {"node", owner}});
    if (!args.json)
      std::cout << fmt::format("{:<52} {:>10}  {}{}\n", p.name, cluster::HumanBytes(p.use.bytes), use,
                               owner.empty() ? "" : " [" + owner + "]");
  }
  if (args.json) std::cout << list.dump(2) << std::endl;
}

void RunClean(const ClusterArgs& args) {
  std::string scope;
  const std::vector<cluster::PoolInfo> orphans = OrphanedPools(args, &scope);
  uint64_t bytes = 0;
  size_t removed = 0;
  for (const auto& p : orphans) {
    if (args.dry_run) {
      std::cout << fmt::format("would remove {} ({})\n", p.name, cluster::HumanBytes(p.use.bytes));
      continue;
    }
    // In use since it was listed (a node starting on it): RemoveUnusedPool refuses.
    if (Status s = cluster::RemoveUnusedPool(p.name); !s.ok()) {
      std::cerr << "pulse cluster clean: " << s.message() << "\n";
      continue;
    }
    std::cout << fmt::format("removed {} ({})\n", p.name, cluster::HumanBytes(p.use.bytes));
    bytes += p.use.bytes;
    ++removed;
  }
  if (orphans.empty()) std::cout << "no orphaned pool among " << scope << "\n";
  else if (!args.dry_run) std::cout << fmt::format("{} pools removed, {} freed\n", removed, cluster::HumanBytes(bytes));
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
  CLI::App* cluster = app.add_subcommand("cluster", "Start, stop, inspect and restart a local cluster (switch + memory nodes); list and clean its pools");
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
  AddStateCommand(cluster, "down",
                  "Stop the cluster: `shutdown` to each node, then SIGTERM, then SIGKILL (idempotent); remove the\n"
                  "pools of its dead nodes, except one a live process uses (a node restarted by hand keeps its pool)",
                  down, RunDown);

  auto status = std::make_shared<ClusterArgs>();
  cmd = AddStateCommand(cluster, "status",
                        "Per node: role, address, alive, and its counters; pool use per tenant (session and durable);\n"
                        "problems such as a full pool; exit 1 unless every node answers",
                        status, RunStatus);
  cmd->add_flag("--json", status->json, "Print one JSON object");
  cmd->add_flag("--check", status->check,
                "Exit 1 also when a problem is reported (a memory node's pool is full: under 5% free)");
  cmd->add_option("--timeout-ms", status->timeout_ms, "How long to wait for each node's answer")
      ->capture_default_str()
      ->check(Within(1, kMaxTimeoutMs));

  auto restart = std::make_shared<ClusterArgs>();
  cmd = AddStateCommand(cluster, "restart",
                        "Start dead nodes of the running cluster again (memory nodes on their pools: data kept; the\n"
                        "switch on its address), leave live ones alone, wait until the switch lists every memory node",
                        restart, RunRestart);
  cmd->add_option("node", restart->nodes, "Nodes to restart if dead: switch, memnode-<id> or <id> (default: all)")
      ->type_name("NODE");

  auto pools = std::make_shared<ClusterArgs>();
  cmd = AddStateCommand(
      cluster, "pools",
      "List the memory nodes' pools on this host (/dev/shm/pulse-*): size, the process using it, the node\n"
      "of this cluster it belongs to, or orphaned (no process uses it and no state file names it)",
      pools, RunPools);
  cmd->add_flag("--json", pools->json, "Print a JSON array");

  auto clean = std::make_shared<ClusterArgs>();
  cmd = AddStateCommand(
      cluster, "clean",
      "Remove orphaned pools of this cluster: those named after it (or in its config) that no process\n"
      "uses and its state file does not name.  Never removes a pool in use, nor one `restart` needs",
      clean, RunClean);
  cmd->add_flag("--all", clean->all,
                "Every unused /dev/shm/pulse-* pool on the host, also other clusters' (their dead nodes lose\n"
                "their data)");
  cmd->add_flag("--dry-run", clean->dry_run, "List what would be removed");
}

}  // namespace pulse::tools
