#include "cluster/launcher.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster/control_session.h"
#include "cluster/keys.h"
#include "cluster/pools.h"
#include "protocol/control_client.h"

namespace pulse::cluster {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using nlohmann::json;

namespace {

// How often a wait re-checks processes and nodes.  The waits sleep between
// checks: nothing here spins.
constexpr milliseconds kCheckInterval{25};
// Longest single control call while waiting for a node.
constexpr milliseconds kProbeTimeout{1000};

milliseconds Left(Clock::time_point deadline) {
  return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

void Progress(const LaunchOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

std::vector<std::string> PollArgs(const ClusterConfig& c, const NodeConfig& n) {
  const PollConfig& p = c.PollOf(n);
  std::vector<std::string> args = {"--poll-window-us", std::to_string(p.window_us), "--poll-when-core-idle",
                                   p.when_core_idle ? "true" : "false"};
  if (p.busy) args.push_back("--busy-poll");
  args.insert(args.end(), {"--log-level", c.log_level});
  return args;
}

std::vector<std::string> SwitchArgs(const std::string& binary, const ClusterConfig& c) {
  std::vector<std::string> a = {binary, "switch", "--listen", c.SwitchAddress()};
  if (!c.routing.empty()) a.insert(a.end(), {"--routing", c.routing});
  for (auto& s : PollArgs(c, c.switch_node)) a.push_back(std::move(s));
  return a;
}

std::vector<std::string> MemNodeArgs(const std::string& binary, const ClusterConfig& c, const NodeConfig& n) {
  const auto connect_s = std::max<int64_t>(1, (c.start_timeout.count() + 999) / 1000);
  std::vector<std::string> a = {binary,
                                "memnode",
                                "--node",
                                std::to_string(n.node),
                                "--listen",
                                fmt::format("{}:{}", n.host, n.port),
                                "--switch",
                                fmt::format("{}:{}", ConnectHost(c.switch_node.host), c.switch_node.port),
                                "--pool-mib",
                                std::to_string(n.pool_mib),
                                "--granularity-kib",
                                std::to_string(n.granularity_kib),
                                "--shm-name",
                                n.shm_name,
                                "--connect-timeout-s",
                                std::to_string(connect_s)};
  if (!n.advertise.empty()) a.insert(a.end(), {"--advertise", n.advertise});
  if (!n.rack.empty()) a.insert(a.end(), {"--rack", n.rack});
  if (!n.rack_tenants.empty()) a.insert(a.end(), {"--rack-tenants", fmt::format("{}", fmt::join(n.rack_tenants, ","))});
  if (n.workspaces != 0) a.insert(a.end(), {"--workspaces", std::to_string(n.workspaces)});
  if (n.pipelines != 0) a.insert(a.end(), {"--pipelines", std::to_string(n.pipelines)});
  if (!n.engine.empty()) a.insert(a.end(), {"--engine", n.engine});
  if (n.max_iterations != 0) a.insert(a.end(), {"--max-iterations", std::to_string(n.max_iterations)});
  for (auto& s : PollArgs(c, n)) a.push_back(std::move(s));
  return a;
}

// `pulse agent` in front of the memory nodes: its [agent] flags last.
std::vector<std::string> AgentArgs(const std::string& binary, const ClusterConfig& c, const NodeConfig& n) {
  std::vector<std::string> a = {binary, "agent", "--listen", fmt::format("{}:{}", n.host, n.port), "--switch",
                                fmt::format("{}:{}", ConnectHost(c.switch_node.host), c.switch_node.port)};
  for (auto& s : PollArgs(c, n)) a.push_back(std::move(s));
  std::istringstream flags(n.agent_flags);
  for (std::string f; flags >> f;) a.push_back(f);
  return a;
}

// A new random instance id (64 bits, hex) for one launch of a node.
std::string NewInstanceId() {
  std::random_device entropy;
  const uint64_t id = (static_cast<uint64_t>(entropy()) << 32) ^ entropy();
  return fmt::format("{:016x}", id);
}

// The variables the nodes get on top of the inherited environment.
std::vector<std::pair<std::string, std::string>> NodeEnvironment(const ClusterConfig& c) {
  std::vector<std::pair<std::string, std::string>> env;
  for (const char* name : {"UCX_POSIX_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING"})
    if (std::getenv(name) == nullptr) env.emplace_back(name, "y");
  for (const auto& kv : c.env) env.push_back(kv);
  if (!c.ucx_tls.empty()) env.emplace_back("UCX_TLS", c.ucx_tls);
  for (auto& kv : SecretEnvironment(c)) env.push_back(std::move(kv));  // the nodes prove and check it
  return env;
}

// The variables node `n` gets: those of every node, then its own.
std::vector<std::pair<std::string, std::string>> NodeEnvironment(const ClusterConfig& c, const NodeConfig& n) {
  auto env = NodeEnvironment(c);
  if (n.role == Role::kMemNode && c.tx) {
    auto tx = TxEnvironment(*c.tx);  // [tx]: the transactions' replicas
    env.insert(env.end(), tx.begin(), tx.end());
  }
  env.insert(env.end(), n.env.begin(), n.env.end());
  return env;
}

// A pool name of its own for each memory node that has none, unique to this
// start: a memory node re-attaches a pool it finds under its name, so a
// name must never lead to the pool of another cluster.
void NamePools(ClusterConfig* c) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const uint64_t stamp = static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
  for (NodeConfig& n : c->memnodes)
    if (n.shm_name.empty()) n.shm_name = fmt::format("/pulse-{}-{}-{}-{:x}", c->name, n.node, getpid(), stamp);
}

Status MakeDirectories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(fmt::format("cannot create run directory '{}': {}", dir, ec.message()));
  return Status::Ok();
}

// The port file of node `name` launched with port 0 (see WritePortFile).
std::string PortFileOf(const std::string& cluster_dir, const std::string& name) {
  return fmt::format("{}/{}.port", cluster_dir, name);
}

// How node `n` ended (for messages); "exited" if it is not our child.
std::string HowItEnded(const ProcessId& p) {
  std::string how = ReapChild(p);
  return how.empty() ? "exited" : how;
}

// Is the node up?  A node launched with port 0 first has to have written its
// port file in `cluster_dir` (its address in `n` then gets the port).  Then
// the switch: answers stats.  A memory node: answers stats and is connected
// to the switch.
Status Probe(ControlSession& session, NodeProcess& n, const std::string& cluster_dir, Clock::time_point deadline) {
  if (n.address.ends_with(":0")) {
    auto port = ReadPortFile(PortFileOf(cluster_dir, n.name));
    if (!port.ok()) return port.status().code() == Status::Code::kNotFound
                               ? Status::Unavailable("has not written its port file yet")
                               : port.status();
    n.address = fmt::format("{}:{}", n.address.substr(0, n.address.size() - 2), *port);
  }
  auto stats = session.Call(n.address, "stats", std::min(kProbeTimeout, std::max(Left(deadline), milliseconds(1))));
  if (!stats.ok()) return stats.status();
  if (!AnsweredBy(n, *stats))
    return Status::FailedPrecondition(fmt::format(
        "another process answers at {} (instance '{}', not '{}' given to the {} started as pid {}): "
        "is something else using that port?",
        n.address, InstanceOf(*stats), n.instance, n.name, n.process.pid));
  if (n.role == Role::kMemNode && !(*stats)["counters"].value("switch_connected", false))
    return Status::Unavailable("answers but is not registered with the switch yet");
  return Status::Ok();
}

// Waits until the nodes `which` of `st` are up, each of them still running;
// fills in the ports the nodes launched with port 0 chose.
Status WaitForNodes(ControlSession& session, ClusterState* st, const std::vector<size_t>& which,
                    const std::string& cluster_dir, Clock::time_point deadline, milliseconds timeout,
                    const LaunchOptions& options) {
  std::set<size_t> waiting(which.begin(), which.end());
  std::map<size_t, std::string> last_error;
  for (;;) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      NodeProcess& n = st->nodes[*it];
      if (!IsRunning(n.process))
        return Status::Unavailable(fmt::format("{} {} while starting; its log {}:\n{}", n.name,
                                               HowItEnded(n.process), n.log, TailOfFile(n.log, 8)));
      Status s = Probe(session, n, cluster_dir, deadline);
      if (s.code() == Status::Code::kFailedPrecondition)  // a stranger: waiting will not help
        return Status::FailedPrecondition(fmt::format("{} did not come up: {}; its log {}:\n{}", n.name, s.message(),
                                                      n.log, TailOfFile(n.log, 8)));
      if (s.ok()) {
        Progress(options, fmt::format("{} is up at {}", n.name, n.address));
        it = waiting.erase(it);
      } else {
        last_error[*it] = s.ToString();
        ++it;
      }
    }
    if (waiting.empty()) return Status::Ok();
    if (Clock::now() >= deadline) {
      const NodeProcess& n = st->nodes[*waiting.begin()];
      return Status::Timeout(fmt::format("{} ({}) did not come up within {} ms (last answer: {}); see its log {}:\n{}",
                                         n.name, n.address, timeout.count(), last_error[*waiting.begin()], n.log,
                                         TailOfFile(n.log, 8)));
    }
    std::this_thread::sleep_for(std::min(kCheckInterval, Left(deadline) + milliseconds(1)));
  }
}

// Waits until the switch lists every memory node of `st` as alive.
Status WaitForRegistrations(ControlSession& session, const ClusterState& st, Clock::time_point deadline,
                            milliseconds timeout) {
  std::set<uint32_t> want;
  for (const NodeProcess& n : st.nodes)
    if (n.role == Role::kMemNode) want.insert(n.node);
  std::string last;
  for (;;) {
    auto stats = session.Call(st.switch_address, "stats", std::min(kProbeTimeout, std::max(Left(deadline), milliseconds(1))));
    if (stats.ok()) {
      std::set<uint32_t> alive;
      for (const json& m : (*stats)["memnodes"])
        if (m.value("alive", false)) alive.insert(m.value("node", 0u));
      if (std::includes(alive.begin(), alive.end(), want.begin(), want.end())) return Status::Ok();
      last = fmt::format("{} of {} memory nodes registered", alive.size(), want.size());
    } else {
      last = stats.status().ToString();
    }
    if (Clock::now() >= deadline)
      return Status::Timeout(fmt::format("the switch did not see every memory node within {} ms ({}); see {}",
                                         timeout.count(), last, st.nodes.front().log));
    std::this_thread::sleep_for(std::min(kCheckInterval, Left(deadline) + milliseconds(1)));
  }
}

// Whether `up` may replace the cluster of state file `old`: only if none of
// its nodes runs and none of its pools is left (data `restart` would bring
// back).  The errors say what is left and which command deals with it.
Status CheckNothingLeft(const ClusterState& old) {
  std::vector<std::string> dead, pools;
  bool any_running = false;
  for (const NodeProcess& n : old.nodes) {
    if (IsRunning(n.process))
      any_running = true;
    else
      dead.push_back(fmt::format("{} (pid {})", n.name, n.process.pid));
    if (!n.shm_name.empty() && PoolUseOf(n.shm_name).exists) pools.push_back(n.shm_name);
  }
  if (any_running && dead.empty())
    return Status::InvalidArgument(
        fmt::format("cluster '{}' from {} is already running (switch at {}); stop it with `pulse cluster down`",
                    old.name, old.state_file, old.switch_address));
  if (any_running)
    return Status::FailedPrecondition(fmt::format(
        "cluster '{}' from {} is partly running: {} no longer {}; `pulse cluster restart` starts {} again "
        "(memory nodes on their pools, data kept), `pulse cluster down` stops the rest",
        old.name, old.state_file, fmt::join(dead, ", "), dead.size() == 1 ? "runs" : "run",
        dead.size() == 1 ? "it" : "them"));
  if (!pools.empty())
    return Status::FailedPrecondition(fmt::format(
        "every node of cluster '{}' from {} has died, and its pools {} still hold its data; "
        "`pulse cluster restart` brings the cluster back with them, `pulse cluster down` removes them",
        old.name, old.state_file, fmt::join(pools, ", ")));
  return Status::Ok();
}

SpawnOptions SpawnOptionsOf(const std::string& binary, const ClusterConfig& c, const NodeConfig& n,
                            const std::string& instance, const LaunchOptions& options) {
  SpawnOptions so;
  so.argv = n.role == Role::kSwitch  ? SwitchArgs(binary, c)
            : n.role == Role::kAgent ? AgentArgs(binary, c, n)
                                     : MemNodeArgs(binary, c, n);
  so.argv.insert(so.argv.end(), {"--instance-id", instance});
  if (n.port == 0) {
    // The node binds port 0 itself and reports the port: choosing a free
    // port here and passing it on would race every other process on the
    // host for it between our check and the node's bind.
    const std::string port_file = PortFileOf(c.ClusterDir(), n.Name());
    std::remove(port_file.c_str());
    so.argv.insert(so.argv.end(), {"--port-file", port_file});
  }
  so.argv.insert(so.argv.end(), n.extra_args.begin(), n.extra_args.end());
  so.env = NodeEnvironment(c, n);
  so.log_path = fmt::format("{}/{}.log", c.ClusterDir(), n.Name());
  so.die_with_parent = options.die_with_parent;
  so.parent_death_signal = options.parent_death_signal;
  return so;
}

Result<NodeProcess> Launch(const std::string& binary, const ClusterConfig& c, const NodeConfig& n,
                           const LaunchOptions& options) {
  NodeProcess p;
  p.name = n.Name();
  p.role = n.role;
  p.node = n.node;
  p.address = fmt::format("{}:{}", ConnectHost(n.host), n.port);
  if (n.role == Role::kMemNode) p.shm_name = n.shm_name;
  p.instance = NewInstanceId();
  const SpawnOptions so = SpawnOptionsOf(binary, c, n, p.instance, options);
  p.log = so.log_path;
  auto pid = Spawn(so);
  if (!pid.ok()) return Status::IoError(fmt::format("{}: {}", p.name, pid.status().message()));
  p.process = *pid;
  Progress(options, fmt::format("started {} (pid {}), log {}", p.name, p.process.pid, p.log));
  return p;
}

}  // namespace

Result<SpawnOptions> NodeSpawnOptions(const ClusterConfig& config, const NodeConfig& n, const LaunchOptions& options) {
  auto binary = NodeBinary(config);
  if (!binary.ok()) return binary.status();
  return SpawnOptionsOf(*binary, config, n, NewInstanceId(), options);
}

std::string PortFileOf(const ClusterConfig& config, const NodeConfig& n) {
  return PortFileOf(config.ClusterDir(), n.Name());
}

Result<uint16_t> WaitForPortFile(const ProcessId& process, const std::string& name, const std::string& port_file,
                                 const std::string& log, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto port = ReadPortFile(port_file);
    if (port.ok() || port.status().code() != Status::Code::kNotFound) return port;
    if (!IsRunning(process))
      return Status::Unavailable(fmt::format("{} {} before writing its port file; its log {}:\n{}", name,
                                             HowItEnded(process), log, TailOfFile(log, 8)));
    if (Clock::now() >= deadline)
      return Status::Timeout(fmt::format("{} wrote no port file {} within {} ms; its log {}:\n{}", name, port_file,
                                         timeout.count(), log, TailOfFile(log, 8)));
    std::this_thread::sleep_for(std::min(kCheckInterval, Left(deadline) + milliseconds(1)));
  }
}

ClusterConfig LocalClusterConfig(const std::string& name, uint32_t memory_nodes, uint64_t pool_mib,
                                 const std::string& run_dir) {
  ClusterConfig c;
  c.source = fmt::format("pulse {}", name);
  c.name = fmt::format("{}-{}", name, getpid());
  const char* env_dir = std::getenv("PULSE_RUN_DIR");
  c.run_dir = !run_dir.empty() ? run_dir : env_dir != nullptr && *env_dir ? env_dir : "run";
  c.switch_node.role = Role::kSwitch;
  c.switch_node.port = 0;
  for (uint32_t i = 0; i < memory_nodes; ++i) {
    NodeConfig n;
    n.role = Role::kMemNode;
    n.node = i;
    n.port = 0;
    n.pool_mib = pool_mib;
    c.memnodes.push_back(n);
  }
  return c;
}

Status KillMemNode(const ClusterState& state, uint32_t node, milliseconds timeout) {
  for (const NodeProcess& p : state.nodes) {
    if (p.role != Role::kMemNode || p.node != node) continue;
    SignalProcess(p.process, SIGKILL);
    if (!WaitForExit(p.process, timeout)) return Status::Timeout(fmt::format("memory node {} survived SIGKILL", node));
    return Status::Ok();
  }
  return Status::NotFound(fmt::format("no memory node {}", node));
}

std::string InstanceOf(const json& stats) {
  const auto it = stats.find("instance");
  return it != stats.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool AnsweredBy(const NodeProcess& n, const json& stats) { return n.instance.empty() || InstanceOf(stats) == n.instance; }

Result<std::string> NodeBinary(const ClusterConfig& config) {
  if (!config.binary.empty()) return config.binary;
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return Status::IoError(fmt::format("cannot find this executable: {}", strerror(errno)));
  return std::string(path, static_cast<size_t>(n));
}

void ApplyTransportEnvironment(const ClusterConfig& config) {
  for (const auto& [k, v] : NodeEnvironment(config)) setenv(k.c_str(), v.c_str(), /*overwrite=*/1);
}

Result<ClusterState> StartCluster(const ClusterConfig& config_in, const LaunchOptions& options) {
  ClusterConfig config = config_in;
  PULSE_RETURN_IF_ERROR(ValidateClusterConfig(config));
  PULSE_RETURN_IF_ERROR(MakeDirectories(config.ClusterDir()));
  const std::string state_file = config.StateFile();
  if (auto old = ReadState(state_file); old.ok()) {
    PULSE_RETURN_IF_ERROR(CheckNothingLeft(*old));
    Progress(options, fmt::format("removing stale state file {} (none of its processes runs, no pool is left)",
                                  state_file));
    std::remove(state_file.c_str());
  } else if (old.status().code() != Status::Code::kNotFound) {
    return Status::InvalidArgument(fmt::format("{}; remove it if no cluster runs", old.status().message()));
  }
  auto binary = NodeBinary(config);
  if (!binary.ok()) return binary.status();
  PULSE_RETURN_IF_ERROR(EnsureClusterKeys(config));  // before NodeEnvironment hands the secret on
  NamePools(&config);

  ClusterState st;
  st.name = config.name;
  st.config_source = config.source;
  st.state_file = state_file;
  st.ucx_tls = config.ucx_tls;
  st.started_unix = static_cast<int64_t>(std::time(nullptr));

  // From here on a failure stops whatever has been started.
  auto fail = [&](Status why) -> Result<ClusterState> {
    if (!st.nodes.empty()) {
      Progress(options, "start failed; stopping the nodes started so far");
      (void)StopCluster(st, std::min(config.stop_timeout, milliseconds(2000)));
    }
    std::remove(state_file.c_str());
    return why;
  };

  ApplyTransportEnvironment(config);  // the control session speaks what the nodes speak
  auto session = ControlSession::Create(config.ucx_tls);
  if (!session.ok()) return session.status();
  const auto deadline = Clock::now() + config.start_timeout;

  auto sw = Launch(*binary, config, config.switch_node, options);
  if (!sw.ok()) return fail(sw.status());
  st.nodes.push_back(std::move(*sw));
  st.switch_address = st.nodes[0].address;
  if (Status s = WriteState(st); !s.ok()) return fail(s);
  if (Status s = WaitForNodes(**session, &st, {0}, config.ClusterDir(), deadline, config.start_timeout, options);
      !s.ok())
    return fail(s);
  st.switch_address = st.nodes[0].address;
  auto switch_port = ParseAddress(st.switch_address);
  if (!switch_port.ok()) return fail(switch_port.status());
  config.switch_node.port = switch_port->second;  // the memory nodes connect to it

  std::vector<size_t> memnodes;
  for (const NodeConfig& n : config.memnodes) {
    auto p = Launch(*binary, config, n, options);
    if (!p.ok()) return fail(p.status());
    memnodes.push_back(st.nodes.size());
    st.nodes.push_back(std::move(*p));
  }
  if (Status s = WriteState(st); !s.ok()) return fail(s);
  if (Status s = WaitForNodes(**session, &st, memnodes, config.ClusterDir(), deadline, config.start_timeout, options);
      !s.ok())
    return fail(s);
  if (Status s = WriteState(st); !s.ok()) return fail(s);  // with the ports the nodes chose
  if (Status s = WaitForRegistrations(**session, st, deadline, config.start_timeout); !s.ok()) return fail(s);
  if (config.agent) {  // the offload agent, once the memory nodes serve
    auto a = Launch(*binary, config, *config.agent, options);
    if (!a.ok()) return fail(a.status());
    st.nodes.push_back(std::move(*a));
    if (Status s = WriteState(st); !s.ok()) return fail(s);
    if (Status s = WaitForNodes(**session, &st, {st.nodes.size() - 1}, config.ClusterDir(), deadline,
                                config.start_timeout, options);
        !s.ok())
      return fail(s);
    if (Status s = WriteState(st); !s.ok()) return fail(s);
  }
  return st;
}

namespace {

// Launches node `index` of `state` again as it was launched before it died:
// its settings from `config`, its address (port) and pool from `state`, a
// new instance id.  Does not wait for it.
Status Relaunch(const ClusterConfig& config, ClusterState* state, size_t index, const std::string& binary,
                const LaunchOptions& options) {
  const NodeProcess& old = state->nodes[index];
  // The ports the nodes chose and the pool name are in the state, not in
  // the config; the node comes back on its old port with its old pool.
  auto own = ParseAddress(old.address);
  if (!own.ok()) return own.status();
  auto sw = ParseAddress(state->switch_address);
  if (!sw.ok()) return sw.status();
  ClusterConfig c = config;
  c.switch_node.port = sw->second;
  NodeConfig n = c.switch_node;
  if (old.role == Role::kMemNode) {
    const NodeConfig* wanted = nullptr;
    for (const NodeConfig& m : config.memnodes)
      if (m.node == old.node) wanted = &m;
    if (wanted == nullptr)
      return Status::NotFound(fmt::format("restart: {} is not in the config {}", old.name, config.source));
    n = *wanted;
    n.shm_name = old.shm_name;
  }
  n.port = own->second;
  auto p = Launch(binary, c, n, options);
  if (!p.ok()) return p.status();
  state->nodes[index] = std::move(*p);
  return Status::Ok();
}

// The index in `state` of the node called `name` ("switch", "memnode-<id>",
// or "<id>" for a memory node).
Result<size_t> NodeIndex(const ClusterState& state, const std::string& name) {
  const std::string full = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos
                               ? "memnode-" + name
                               : name;
  std::vector<std::string> names;
  for (size_t i = 0; i < state.nodes.size(); ++i) {
    if (state.nodes[i].name == full) return i;
    names.push_back(state.nodes[i].name);
  }
  return Status::NotFound(
      fmt::format("restart: cluster '{}' has no node '{}' (its nodes: {})", state.name, name, fmt::join(names, ", ")));
}

}  // namespace

Status RestartMemNode(const ClusterConfig& config, ClusterState* state, uint32_t node, const LaunchOptions& options) {
  size_t index = state->nodes.size();
  for (size_t i = 0; i < state->nodes.size(); ++i)
    if (state->nodes[i].role == Role::kMemNode && state->nodes[i].node == node) index = i;
  if (index == state->nodes.size()) return Status::NotFound(fmt::format("restart: the cluster has no memory node {}", node));
  if (IsRunning(state->nodes[index].process))
    return Status::InvalidArgument(fmt::format("restart: memory node {} still runs", node));
  auto binary = NodeBinary(config);
  if (!binary.ok()) return binary.status();
  PULSE_RETURN_IF_ERROR(Relaunch(config, state, index, *binary, options));
  auto session = ControlSession::Create(config.ucx_tls);
  if (!session.ok()) return session.status();
  return WaitForNodes(**session, state, {index}, config.ClusterDir(), Clock::now() + config.start_timeout,
                      config.start_timeout, options);
}

Result<std::vector<NodeOutcome>> RestartDeadNodes(const ClusterConfig& config, ClusterState* state,
                                                  const std::vector<std::string>& names,
                                                  const LaunchOptions& options) {
  std::vector<size_t> chosen;
  for (const std::string& name : names) {
    auto index = NodeIndex(*state, name);
    if (!index.ok()) return index.status();
    if (std::find(chosen.begin(), chosen.end(), *index) == chosen.end()) chosen.push_back(*index);
  }
  if (names.empty())
    for (size_t i = 0; i < state->nodes.size(); ++i) chosen.push_back(i);

  std::vector<size_t> dead_switch, dead_memnodes;
  for (size_t i : chosen) {
    const NodeProcess& n = state->nodes[i];
    if (IsRunning(n.process)) continue;
    if (n.role == Role::kSwitch) {
      dead_switch.push_back(i);
      continue;
    }
    // A node restarted by hand serves this pool: a second one cannot.
    if (const PoolUse use = PoolUseOf(n.shm_name); use.in_use)
      return Status::FailedPrecondition(fmt::format(
          "restart: the pool {} of {} is in use by pid {}, a process this cluster did not start "
          "(restarted by hand?); stop that process first",
          n.shm_name, n.name, use.user));
    dead_memnodes.push_back(i);
  }
  std::vector<NodeOutcome> out;
  if (!dead_switch.empty() || !dead_memnodes.empty()) {
    auto binary = NodeBinary(config);
    if (!binary.ok()) return binary.status();
    ApplyTransportEnvironment(config);  // the control session speaks what the nodes speak
    auto session = ControlSession::Create(config.ucx_tls);
    if (!session.ok()) return session.status();
    const auto deadline = Clock::now() + config.start_timeout;
    // The switch first: the memory nodes register with it.
    for (const std::vector<size_t>* group : {&dead_switch, &dead_memnodes}) {
      if (group->empty()) continue;
      for (size_t i : *group) {
        Progress(options, fmt::format("restarting {} at {}", state->nodes[i].name, state->nodes[i].address));
        PULSE_RETURN_IF_ERROR(Relaunch(config, state, i, *binary, options));
      }
      PULSE_RETURN_IF_ERROR(
          WaitForNodes(**session, state, *group, config.ClusterDir(), deadline, config.start_timeout, options));
    }
    PULSE_RETURN_IF_ERROR(WaitForRegistrations(**session, *state, deadline, config.start_timeout));
  }
  for (size_t i : chosen) {
    const NodeProcess& n = state->nodes[i];
    const bool restarted = std::find(dead_switch.begin(), dead_switch.end(), i) != dead_switch.end() ||
                           std::find(dead_memnodes.begin(), dead_memnodes.end(), i) != dead_memnodes.end();
    out.push_back({n.name, restarted ? fmt::format("restarted (pid {})", n.process.pid)
                                     : fmt::format("running (pid {}), left alone", n.process.pid)});
  }
  return out;
}

Result<std::vector<StopOutcome>> StopCluster(const ClusterState& state, milliseconds stage_timeout) {
  std::vector<StopOutcome> out;
  std::vector<const NodeProcess*> order;  // the agent, memory nodes, the switch last
  for (const NodeProcess& n : state.nodes)
    if (n.role == Role::kAgent) order.push_back(&n);
  for (const NodeProcess& n : state.nodes)
    if (n.role == Role::kMemNode) order.push_back(&n);
  for (const NodeProcess& n : state.nodes)
    if (n.role == Role::kSwitch) order.push_back(&n);
  std::vector<bool> ran(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    ran[i] = IsRunning(order[i]->process);
    out.push_back({order[i]->name, ran[i] ? "still running" : "not running"});
  }

  auto all_gone = [&] {
    for (size_t i = 0; i < order.size(); ++i)
      if (IsRunning(order[i]->process)) return false;
    return true;
  };
  auto wait_gone = [&](milliseconds timeout) {  // each on its pidfd, within one deadline
    const auto deadline = Clock::now() + timeout;
    for (const NodeProcess* n : order) WaitForExit(n->process, Left(deadline));
    return all_gone();
  };
  auto mark = [&](const char* how) {
    for (size_t i = 0; i < order.size(); ++i)
      if (ran[i] && out[i].how == "still running" && !IsRunning(order[i]->process)) out[i].how = how;
  };

  // Stage 1: the shutdown control operation, to every node that runs.
  if (!all_gone()) {
    auto session = ControlSession::Create(state.ucx_tls);
    if (session.ok()) {
      const auto deadline = Clock::now() + stage_timeout;
      for (size_t i = 0; i < order.size(); ++i) {
        if (!IsRunning(order[i]->process) || Clock::now() >= deadline) continue;
        // Only to the node itself: whatever else answers at its address
        // (its port taken by another process) is not ours to stop.
        if (!order[i]->instance.empty()) {
          auto stats = (*session)->Call(order[i]->address, "stats", std::min(kProbeTimeout, Left(deadline)));
          if (!stats.ok() || !AnsweredBy(*order[i], *stats)) continue;
        }
        (void)(*session)->Call(order[i]->address, "shutdown", std::min(kProbeTimeout, Left(deadline)));
      }
      wait_gone(Left(deadline));
    }
  }
  mark("shutdown");
  // Stage 2: SIGTERM; stage 3: SIGKILL.
  if (!all_gone()) {
    for (const NodeProcess* n : order) SignalProcess(n->process, SIGTERM);
    wait_gone(stage_timeout);
    mark("SIGTERM");
  }
  if (!all_gone()) {
    for (const NodeProcess* n : order) SignalProcess(n->process, SIGKILL);
    wait_gone(stage_timeout);
    mark("SIGKILL");
  }
  // A pool object outlives a killed node; the names are this cluster's own,
  // but a node restarted by hand may serve one again: that one stays.
  for (size_t i = 0; i < order.size(); ++i) {
    const NodeProcess* n = order[i];
    if (n->shm_name.empty() || IsRunning(n->process)) continue;
    if (const PoolUse use = PoolUseOf(n->shm_name); use.in_use)
      out[i].how += fmt::format("; pool {} kept: in use by pid {}", n->shm_name, use.user);
    else if (use.exists)
      shm_unlink(n->shm_name.c_str());
  }
  for (size_t i = 0; i < order.size(); ++i)
    if (IsRunning(order[i]->process))
      return Status::Timeout(fmt::format("{} (pid {}) still runs after SIGKILL; state kept in {}", order[i]->name,
                                         order[i]->process.pid, state.state_file));
  if (!state.state_file.empty()) std::remove(state.state_file.c_str());
  return out;
}

Result<std::vector<StopOutcome>> ClusterGuard::Stop() {
  if (!state_) return std::vector<StopOutcome>{};
  auto r = StopCluster(*state_, stage_timeout_);
  state_.reset();
  return r;
}

}  // namespace pulse::cluster
