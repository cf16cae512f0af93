// pulse switch | memnode: the two server processes of a rack.
//
// Each command parses and checks its flags, turns SIGINT/SIGTERM into a
// clean stop (a thread of its own waits for them with sigwait, so the event
// loop never needs an async-signal-safe path), runs its server until a
// `shutdown` control operation or a signal, and exits 0.  Startup failures
// (address in use, switch unreachable, ...) are logged and exit 1.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cluster/process.h"
#include "memnode/memnode_server.h"
#include "node/node_log.h"
#include "pulse/cluster.h"
#include "pulse/net.h"
#include "rpc/rpc_extension.h"
#include "tx/tx_replica.h"
#include "agent/memory_agent.h"
#include "protocol/routing_table.h"
#include "switch/switch_server.h"
#include "tools/commands.h"
#include "tools/server_process.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

// ---- shared by both commands -----------------------------------------------

constexpr const char* kEnvironmentHelp =
    "Transport: UCX chooses (RDMA, shared memory, TCP); UCX_TLS overrides, e.g. UCX_TLS=tcp.\n"
    "UCX_POSIX_ERROR_HANDLING and UCX_SYSV_ERROR_HANDLING default to y (shared memory between\n"
    "local processes with dead-peer detection), UCX_CM_REUSEADDR to y (a restarted node can\n"
    "listen on its address again at once).  SIGINT/SIGTERM stop the node cleanly (exit 0).";

// Common flags of both commands.
struct CommonArgs {
  uint32_t poll_window_us = net::kDefaultPollWindowUs;
  bool poll_when_core_idle = true;
  bool busy_poll = false;
  std::string log_level = "info";
  std::string port_file;
  std::string instance_id;
  SecretArgs secret;
};

void AddCommonFlags(CLI::App* cmd, CommonArgs* args) {
  cmd->add_option("--poll-window-us", args->poll_window_us,
                  "Adaptive polling: keep polling this long after traffic before sleeping on the event\n"
                  "fd (0: sleep at once)")
      ->capture_default_str()
      ->check(Within(0, kMaxPollWindowUs));
  cmd->add_option("--poll-when-core-idle", args->poll_when_core_idle,
                  "Adaptive polling: poll within the window only while at most one thread of the machine waits for a\n"
                  "CPU and this one was not preempted, else sleep at once (docs/cluster.md)")
      ->capture_default_str()
      ->type_name("true|false");
  cmd->add_flag("--busy-poll", args->busy_poll,
                "Never sleep: poll all the time (dedicated cores only; an idle node then uses a full core)");
  cmd->add_option("--log-level", args->log_level, "Least severe log lines printed on stderr")
      ->check(kLogLevel)
      ->type_name("error|warn|info|debug")
      ->capture_default_str();
  cmd->add_option("--port-file", args->port_file,
                  "Once listening (and, for a memory node, registered), write the port listened on to\n"
                  "this file: how a launcher learns the port a node given port 0 chose")
      ->type_name("PATH");
  cmd->add_option("--instance-id", args->instance_id,
                  "An id returned in `stats` as \"instance\": how `pulse cluster up` tells the process it\n"
                  "started from another one answering on the same address")
      ->type_name("ID");
  AddSecretFlags(cmd, &args->secret);
}

void ApplyPoll(const CommonArgs& args, net::WorkerOptions* wo) {
  wo->poll_mode = args.busy_poll ? net::PollMode::kBusy : net::PollMode::kAdaptive;
  wo->poll_window_us = args.poll_window_us;
  wo->poll_when_core_idle = args.poll_when_core_idle;
}

// Logs the error and fails the command with exit code 1.
[[noreturn]] void Fail(const node::NodeLog& log, const std::string& message) {
  log.Error("{}", message);
  throw CLI::RuntimeError(1);
}

// Writes the port file if one was asked for; a failure fails the command.
void WritePortFileIfAsked(const CommonArgs& args, uint16_t port, const node::NodeLog& log) {
  if (args.port_file.empty()) return;
  if (Status s = cluster::WritePortFile(args.port_file, port); !s.ok()) Fail(log, s.message());
}

// ---- pulse switch ------------------------------------------------------------

struct SwitchArgs {
  std::string listen = fmt::format("127.0.0.1:{}", kDefaultSwitchPort);
  std::string routing;  // direct | switch; empty: $PULSE_ROUTING, else direct
  uint64_t page_bytes = switchd::SwitchServerOptions{}.page_bytes;
  std::string swaps = "off";
  uint64_t swap_timeout_ms = switchd::SwitchServerOptions{}.swap_timeout.count();
  CommonArgs common;
};

void RunSwitch(const SwitchArgs& args) {
  node::NodeLog log("switch", *node::ParseLogLevel(args.common.log_level));
  switchd::SwitchServerOptions options;
  ApplySecret(args.common.secret, &options.worker, log);
  SplitHostPort(args.listen, &options.listen_host, &options.listen_port);
  options.instance_id = args.common.instance_id;
  options.page_bytes = args.page_bytes;
  options.swaps = args.swaps == "on";
  options.swap_timeout = std::chrono::milliseconds(args.swap_timeout_ms);
  {
    Result<RoutingMode> routing =
        args.routing.empty() ? DefaultRoutingMode() : ParseRoutingMode(args.routing, "--routing");
    if (!routing.ok()) Fail(log, routing.status().message());
    options.routing = *routing;
    log.Info("routing: {}", RoutingModeName(options.routing));
  }
  ApplyPoll(args.common, &options.worker);
  DefaultUcxEnvironment();

  std::unique_ptr<switchd::SwitchServer> server;
  ShutdownSignals signals;  // before the Worker's threads exist
  auto created = switchd::SwitchServer::Create(options, &log);
  if (!created.ok()) Fail(log, "cannot start: " + created.status().ToString());
  server = std::move(created).value();
  signals.Start([&](int sig) {
    log.Info("{} received: shutting down", strsignal(sig));
    server->RequestStop();
  });
  Status s = server->Start();
  if (!s.ok()) Fail(log, s.message());
  WritePortFileIfAsked(args.common, server->port(), log);
  s = server->Run();
  if (!s.ok()) Fail(log, s.ToString());
}

void AddSwitchCommand(CLI::App& app) {
  auto args = std::make_shared<SwitchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "switch",
      "Run the rack's switch: routes traversals between CPU nodes and memory nodes by cur_ptr,\n"
      "forwards continuations between memory nodes, answers dead nodes and invalid pointers");
  cmd->add_option("--listen", args->listen, "Address memory nodes and CPU nodes connect to")
      ->check(kHostPort)
      ->type_name("HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--routing", args->routing,
                  "direct: CPU nodes and memory nodes send traversals straight to the owner of cur_ptr and the\n"
                  "switch is the control plane; switch: every traversal message through the switch\n"
                  "(default: $PULSE_ROUTING, else direct; memory nodes and CPU nodes follow the switch)")
      ->check(CLI::IsMember({"direct", "switch"}));
  cmd->add_option("--page-bytes", args->page_bytes,
                  "Page size of the page directory of a racked cluster (docs/tier.md): a power of two\n"
                  "from 4096 to 2^30")
      ->capture_default_str();
  cmd->add_option("--swaps", args->swaps,
                  "on: hot-page swap requests are run (pages without allocations move; docs/tier.md);\n"
                  "off: they stay queued")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--swap-timeout-ms", args->swap_timeout_ms,
                  "Longest wait for one memory node's answer during a swap")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddCommonFlags(cmd, &args->common);
  cmd->footer(kEnvironmentHelp);
  cmd->callback([args] { RunSwitch(*args); });
}

// ---- pulse memnode -----------------------------------------------------------

struct MemNodeArgs {
  uint32_t node = 0;
  std::string listen = "127.0.0.1:0";
  std::string advertise;
  std::string switch_address = fmt::format("127.0.0.1:{}", kDefaultSwitchPort);
  uint64_t pool_mib = 0;
  uint64_t granularity_kib = 64;
  uint32_t workspaces = EngineOptions{}.workspaces;
  uint32_t max_iterations = EngineOptions{}.max_iterations;
  std::string engine;  // interp | jit; empty: $PULSE_ENGINE, else the default
  std::string pipelines;  // N >= 1; empty: $PULSE_PIPELINES, else 1
  uint32_t program_cache_entries = MemNodeServiceOptions{}.program_cache_entries;
  std::string shm_name;
  std::string tx_log;  // empty: derived from the pool's name
  uint32_t connect_timeout_s = 10;
  bool no_calibrate = false;
  double rpc_core_ghz = 1.0;
  bool fresh_pool = false;
  uint64_t session_grace_ms = 10000;
  uint64_t restored_session_grace_ms = 60000;
  std::string rack;
  std::vector<uint32_t> rack_tenants;
  CommonArgs common;
};

void RunMemNode(const MemNodeArgs& args) {
  node::NodeLog log(fmt::format("memnode {}", args.node), *node::ParseLogLevel(args.common.log_level));
  if ((args.pool_mib * 1024) % args.granularity_kib != 0)
    Fail(log, fmt::format("--pool-mib {} is not a multiple of --granularity-kib {}", args.pool_mib,
                          args.granularity_kib));
  memnode::MemNodeServerOptions options;
  ApplySecret(args.common.secret, &options.worker, log);
  options.node = args.node;
  SplitHostPort(args.listen, &options.listen_host, &options.listen_port);
  SplitHostPort(args.switch_address, &options.switch_host, &options.switch_port);
  options.advertise_host = args.advertise;
  options.pool_bytes = args.pool_mib << 20;
  options.granularity_bytes = args.granularity_kib << 10;
  options.shm_name = args.shm_name;
  options.service.engine.workspaces = args.workspaces;
  options.service.engine.max_iterations = args.max_iterations;
  {
    // --engine, else PULSE_ENGINE (so a whole cluster test can run on the
    // interpreter), else JIT where the host has a backend.
    const char* env = std::getenv("PULSE_ENGINE");
    const std::string name = !args.engine.empty() ? args.engine : env != nullptr ? std::string(env) : std::string();
    if (!name.empty()) {
      const std::optional<EngineKind> kind = EngineKindFromName(name);
      if (!kind) Fail(log, fmt::format("engine '{}' (from {}) is not interp or jit", name,
                                       args.engine.empty() ? "PULSE_ENGINE" : "--engine"));
      options.service.engine.engine = *kind;
    }
    log.Info("engine: {}", EngineKindName(options.service.engine.engine));
  }
  {
    // --pipelines, else PULSE_PIPELINES (so a whole cluster test can run
    // with several), else 1.
    const char* env = std::getenv("PULSE_PIPELINES");
    const std::string text =
        !args.pipelines.empty() ? args.pipelines : env != nullptr ? std::string(env) : std::string();
    if (!text.empty()) {
      Result<uint32_t> n = memnode::ParsePipelineCount(text);
      if (!n.ok())
        Fail(log, fmt::format("{}: {}", args.pipelines.empty() ? "PULSE_PIPELINES" : "--pipelines",
                              n.status().message()));
      options.service.pipelines = *n;
    }
    if (options.service.pipelines > 1)
      log.Info("engine pipelines: {} threads of {} workspaces", options.service.pipelines,
               options.service.engine.workspaces);
  }
  options.service.program_cache_entries = args.program_cache_entries;
  options.connect_timeout = std::chrono::seconds(args.connect_timeout_s);
  options.calibrate = !args.no_calibrate;
  options.extensions.push_back(rpc::RpcExtension({.core_ghz = args.rpc_core_ghz}));
  options.extensions.push_back(agent::MemoryAgentExtension());
  {
    // The transactions' durable log goes with the pool: a restarted node
    // that re-attaches the pool (same --shm-name) replays it.
    std::string path = args.tx_log;
    if (path.empty()) {
      const char* dir = std::getenv("PULSE_TX_LOG_DIR");
      path = fmt::format("{}/pulse-tx-{}.log", dir != nullptr ? dir : "/var/tmp",
                         args.shm_name.empty() ? fmt::format("node{}-pid{}", args.node, ::getpid())
                                               : args.shm_name.substr(1));
    }
    Result<tx::TxReplicaOptions> tx_options = tx::TxReplicaOptionsFromEnv(path);
    if (!tx_options.ok()) Fail(log, tx_options.status().message());
    if (!tx_options->sync) log.Warn("tx: PULSE_TX_LOG_SYNC=none: the transactions' log is not fdatasync'd");
    options.extensions.push_back(tx::TxExtension(*tx_options));
  }
  options.reattach_pool = !args.fresh_pool;
  options.instance_id = args.common.instance_id;
  options.session_grace = std::chrono::milliseconds(args.session_grace_ms);
  options.restored_session_grace = std::chrono::milliseconds(args.restored_session_grace_ms);
  options.rack = args.rack;
  options.rack_tenants.insert(args.rack_tenants.begin(), args.rack_tenants.end());
  if (options.rack.empty() && !options.rack_tenants.empty()) Fail(log, "--rack-tenants needs --rack");
  ApplyPoll(args.common, &options.worker);
  DefaultUcxEnvironment();
  // Each allocation is registered on its own and unregistered when it is
  // freed or reclaimed; with UCX 1.13's default InfiniBand registration
  // cache (UCX_IB_REG_METHODS=rcache,...), ucp_mem_unmap leaves the memory
  // region registered in the cache, so a key kept from before still reaches
  // the bytes after another tenant gets them.  Direct registration
  // deregisters (revokes the key) at once.  docs/security.md, "Keys of freed
  // memory".
  setenv("UCX_IB_REG_METHODS", "direct", /*overwrite=*/0);
  if (const std::string methods = getenv("UCX_IB_REG_METHODS"); methods != "direct")
    log.Warn("UCX_IB_REG_METHODS={}: on RDMA, keys of freed memory may keep working until UCX evicts the "
             "registration (use direct)",
             methods);

  std::unique_ptr<memnode::MemNodeServer> server;
  ShutdownSignals signals;  // before the Worker's threads exist
  auto created = memnode::MemNodeServer::Create(options, &log);
  if (!created.ok()) Fail(log, "cannot start: " + created.status().ToString());
  server = std::move(created).value();
  signals.Start([&](int sig) {
    log.Info("{} received: shutting down", strsignal(sig));
    server->RequestStop();
  });
  Status s = server->Start();
  if (!s.ok()) {
    if (signals.received()) return;  // stopped while starting: a clean exit
    Fail(log, s.message());
  }
  WritePortFileIfAsked(args.common, server->port(), log);
  s = server->Run();
  if (!s.ok()) Fail(log, s.ToString());
}

void AddMemNodeCommand(CLI::App& app) {
  auto args = std::make_shared<MemNodeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "memnode",
      "Run a memory node: a shared-memory pool with an allocator, range translation and\n"
      "protection, and the traversal engine; registers its pool with the switch");
  cmd->add_option("--node", args->node,
                  "Memory node id; the node's far addresses start at (id + 1) * 2^40")
      ->required()
      ->check(CLI::Range(0u, (1u << 24) - 2));
  cmd->add_option("--listen", args->listen,
                  "Address CPU nodes connect to for allocation and one-sided reads and writes\n"
                  "(port 0: any free port; the switch tells CPU nodes the real one)")
      ->check(kHostPort)
      ->type_name("HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--advertise", args->advertise,
                  "Host CPU nodes should use to reach this node (default: the --listen host; set it\n"
                  "when listening on 0.0.0.0)");
  cmd->add_option("--switch", args->switch_address, "The switch's address")
      ->check(kHostPort)
      ->type_name("HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--pool-mib", args->pool_mib, "Pool size in MiB")
      ->required()
      ->check(Within(1, 1 << 20));
  cmd->add_option("--granularity-kib", args->granularity_kib,
                  "Allocation granularity in KiB: every allocation is a multiple (a multiple of 4)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            unsigned long long v = 0;
            try {
              v = std::stoull(text);
            } catch (...) {
              return "expected a number of KiB, got '" + text + "'";
            }
            return v >= 4 && v % 4 == 0 && v <= (1ull << 30) ? "" : "must be a positive multiple of 4 (KiB)";
          },
          ""))
      ->type_name("KIB")
      ->capture_default_str();
  cmd->add_option("--engine", args->engine,
                  "interp or jit (default: $PULSE_ENGINE, else jit on x86-64 and interp elsewhere)")
      ->check(CLI::IsMember({"interp", "jit"}));
  cmd->add_option("--pipelines", args->pipelines,
                  "Engine pipelines, each a thread with --workspaces workspaces over the one range table\n"
                  "(default: $PULSE_PIPELINES, else 1: the engine runs on the network thread)")
      ->type_name("N")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            Result<uint32_t> n = memnode::ParsePipelineCount(text);
            return n.ok() ? "" : n.status().message();
          },
          ""));
  cmd->add_option("--workspaces", args->workspaces, "Engine workspaces (traversals in flight at once)")
      ->capture_default_str()
      ->check(Within(1, 4096));
  cmd->add_option("--program-cache-entries", args->program_cache_entries,
                  "Programs cached by hash (a full cache is emptied)")
      ->capture_default_str()
      ->check(Within(1, 1 << 24));
  cmd->add_option("--rpc-core-ghz", args->rpc_core_ghz,
                  "Clock rate of the wimpy SmartNIC core that `rpc-wimpy` calls emulate (their handler time\n"
                  "is stretched by host GHz / this; src/rpc/core_clock.h)")
      ->capture_default_str()
      ->check(Within(0.01, 100));
  cmd->add_flag("--no-calibrate", args->no_calibrate,
               "Skip measuring the engine's t_i / t_d at start (CPU nodes then use their defaults)");
  cmd->add_flag("--fresh-pool", args->fresh_pool,
               "Discard the pool of a crashed node with the same --shm-name instead of re-attaching it\n"
               "(by default a restarted node keeps that pool's data and allocations)");
  cmd->add_option("--session-grace-ms", args->session_grace_ms,
                  "How long a client session's memory outlives the client's last connection (its\n"
                  "lease) before it is reclaimed; durable roots are kept")
      ->check(CLI::Range(uint64_t{1}, uint64_t{24} * 3600 * 1000))
      ->capture_default_str();
  cmd->add_option("--restored-session-grace-ms", args->restored_session_grace_ms,
                  "The same for the sessions a restarted node finds in its pool: how long their clients\n"
                  "have to come back")
      ->check(CLI::Range(uint64_t{1}, uint64_t{24} * 3600 * 1000))
      ->capture_default_str();
  cmd->add_option("--max-iterations", args->max_iterations,
                  "Iterations a request runs when it does not set its own limit")
      ->capture_default_str()
      ->check(Within(1, 4294967295.0));
  cmd->add_option("--shm-name", args->shm_name,
                  "Name of the pool's POSIX shared-memory object (default /pulse-node-<node>-<port>);\n"
                  "unlinked on exit")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return text.size() >= 2 && text[0] == '/' && text.find('/', 1) == std::string::npos
                       ? ""
                       : "must be '/' followed by a name without '/'";
          },
          ""))
      ->type_name("/NAME");
  cmd->add_option("--tx-log", args->tx_log,
                  "The chain-replicated transactions' durable log (docs/tx.md; default\n"
                  "$PULSE_TX_LOG_DIR or /var/tmp, pulse-tx-<shm name>.log)")
      ->type_name("PATH");
  cmd->add_option("--rack", args->rack,
                  "The rack whose shared pool this node is (docs/racks.md): CPU nodes of that rack on this\n"
                  "host map the pool and read and write it by loads and stores")
      ->type_name("NAME");
  cmd->add_option("--rack-tenants", args->rack_tenants,
                  "Tenants whose CPU nodes are offered the rack pool (comma-separated ids; default none)")
      ->delimiter(',')
      ->type_name("ID,...");
  cmd->add_option("--connect-timeout-s", args->connect_timeout_s,
                  "How long to keep trying to reach the switch at start")
      ->capture_default_str()
      ->check(Within(1, 3600));
  AddCommonFlags(cmd, &args->common);
  cmd->footer(kEnvironmentHelp);
  cmd->callback([args] { RunMemNode(*args); });
}

}  // namespace

void AddNodeCommands(CLI::App& app) {
  AddSwitchCommand(app);
  AddMemNodeCommand(app);
}

}  // namespace pulse::tools
