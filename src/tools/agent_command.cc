// pulse agent: the offload agent (issue 17, seed 003's SmartNIC agent) as a
// process in front of the memory nodes, shared by the host agents of this
// machine (src/agent/agent_server.h).  Like the node commands it stops
// cleanly on SIGINT/SIGTERM or a control "shutdown" and exits 0; startup
// failures exit 1.
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "agent/adaptive_switch.h"
#include "agent/agent_server.h"
#include "cluster/process.h"
#include "pulse/cluster.h"
#include "tools/commands.h"
#include "tools/server_process.h"

namespace pulse::tools {
namespace {

struct AgentArgs {
  std::string listen = fmt::format("127.0.0.1:{}", agent::kDefaultAgentPort);
  std::string switch_address = fmt::format("127.0.0.1:{}", kDefaultSwitchPort);
  uint32_t tenant = 1;
  std::string mode = "agent";
  uint64_t max_message_kib = agent::AgentServerOptions{}.max_message_bytes >> 10;
  uint64_t node_window_kib = agent::AgentServerOptions{}.node_window_bytes >> 10;
  bool no_aggregation = false, no_async = false, no_static = false, no_dynamic = false, no_prefetch = false,
       no_adaptive = false;
  uint64_t static_cache_mib = agent::AgentOptions{}.static_cache_bytes >> 20;
  uint64_t dynamic_cache_mib = agent::AgentOptions{}.dynamic_cache_bytes >> 20;
  uint64_t entry_kib = agent::AgentOptions{}.entry_bytes >> 10;
  uint32_t prefetch_entries = agent::AgentOptions{}.prefetch_entries;
  uint32_t max_in_flight = agent::AgentOptions{}.max_in_flight;
  uint64_t chunk_mib = agent::AgentOptions{}.chunk_bytes >> 20;
  double threshold = agent::AgentOptions{}.hit_rate_threshold;
  double fabric_gbps = 0, agent_gbps = 0;
  uint32_t memory_timeout_ms = 5000;
  std::string cpus;
  std::string log_level = "info";
  std::string port_file;
  std::string instance_id;
  uint32_t poll_window_us = net::kDefaultPollWindowUs;
  bool poll_when_core_idle = true;
  SecretArgs secret;
};

// "0,2-3" -> {0, 2, 3}; false if malformed.
bool ParseCpuList(const std::string& text, std::vector<int>* out) {
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const size_t dash = part.find('-');
    try {
      const int lo = std::stoi(part.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      if (lo < 0 || hi < lo) return false;
      for (int c = lo; c <= hi; ++c) out->push_back(c);
    } catch (...) {  // std::stoi on a non-number: a bad flag, reported by the caller
      return false;
    }
  }
  return !out->empty();
}

void RunAgent(const AgentArgs& args) {
  node::NodeLog log("agent", *node::ParseLogLevel(args.log_level));
  auto fail = [&](const std::string& message) {
    log.Error("{}", message);
    throw CLI::RuntimeError(1);
  };
  agent::AgentServerOptions options;
  ApplySecret(args.secret, &options.worker, log);
  SplitHostPort(args.listen, &options.listen_host, &options.port);
  options.switch_address = args.switch_address;
  options.tenant = args.tenant;
  options.log_level = args.log_level;
  options.instance_id = args.instance_id;
  options.memory_timeout = std::chrono::milliseconds(args.memory_timeout_ms);
  options.max_message_bytes = args.max_message_kib << 10;
  options.node_window_bytes = args.node_window_kib << 10;
  options.worker.poll_window_us = args.poll_window_us;
  options.worker.poll_when_core_idle = args.poll_when_core_idle;
  if (!args.cpus.empty() && !ParseCpuList(args.cpus, &options.cpus))
    fail(fmt::format("--cpus '{}' is not a list such as 0,2-3", args.cpus));
  agent::AgentOptions& a = options.agent;
  a.aggregation = !args.no_aggregation;
  a.async_forwarding = !args.no_async;
  a.static_cache = !args.no_static;
  a.dynamic_cache = !args.no_dynamic;
  a.prefetch = !args.no_prefetch;
  a.adaptive = !args.no_adaptive;
  if (args.mode == "proxy") a = agent::ProxyAgentOptions(a);
  a.static_cache_bytes = args.static_cache_mib << 20;
  a.dynamic_cache_bytes = args.dynamic_cache_mib << 20;
  a.entry_bytes = args.entry_kib << 10;
  a.prefetch_entries = args.prefetch_entries;
  a.max_in_flight = args.max_in_flight;
  a.chunk_bytes = args.chunk_mib << 20;
  a.hit_rate_threshold = args.fabric_gbps > 0 || args.agent_gbps > 0
                             ? agent::HitRateThreshold(args.fabric_gbps, args.agent_gbps)
                             : args.threshold;
  DefaultUcxEnvironment();

  ShutdownSignals signals;  // before any Worker's threads exist
  auto started = agent::AgentServer::Start(options);
  if (!started.ok()) fail("cannot start: " + started.status().ToString());
  std::unique_ptr<agent::AgentServer> server = std::move(*started);
  signals.Start([&](int sig) {
    log.Info("{} received: shutting down", strsignal(sig));
    server->RequestStop();
  });
  if (!args.port_file.empty()) {
    if (Status s = cluster::WritePortFile(args.port_file, server->port()); !s.ok()) fail(s.message());
  }
  log.Info("listening on {}:{} for host agents; cluster at {}; mode {} (aggregation {}, async {}, static cache {} MiB, "
           "dynamic cache {} MiB of {} KiB entries, prefetch {}, adaptive {} at {:.0f}%, memory messages of at most {} KiB)",
           options.listen_host, server->port(), options.switch_address, args.mode, a.aggregation, a.async_forwarding,
           a.static_cache ? args.static_cache_mib : 0, a.dynamic_cache ? args.dynamic_cache_mib : 0, args.entry_kib,
           a.prefetch, a.adaptive, a.hit_rate_threshold * 100, args.max_message_kib);
  if (Status s = server->Run(); !s.ok()) fail(s.ToString());
}

}  // namespace

void AddAgentCommand(CLI::App& app) {
  auto args = std::make_shared<AgentArgs>();
  CLI::App* cmd = app.add_subcommand(
      "agent",
      "Run the offload agent (seed 003's SmartNIC agent) in front of the memory nodes: host agents'\n"
      "page requests are batched, forwarded asynchronously, and served from its static and dynamic\n"
      "caches with prefetch (docs/farmem_agent.md)");
  cmd->add_option("--listen", args->listen, "Address host agents connect to")
      ->check(kHostPort)
      ->type_name("HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--switch", args->switch_address, "The cluster's switch")
      ->check(kHostPort)
      ->type_name("HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--tenant", args->tenant, "Tenant owning the regions' far memory")->capture_default_str();
  cmd->add_option("--mode", args->mode, "agent: the optimisations below; proxy: forwarding only")
      ->check(CLI::IsMember({"agent", "proxy"}))
      ->capture_default_str();
  cmd->add_option("--max-message-kib", args->max_message_kib,
                  "Largest read or write sent to a memory node as one message (longer ones go as pieces)")
      ->check(CLI::Range(uint64_t{4}, uint64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--node-window-kib", args->node_window_kib,
                  "Bytes of reads and writes outstanding at one memory node (on demand ahead of prefetch)")
      ->check(CLI::Range(uint64_t{4}, uint64_t{1} << 30))
      ->capture_default_str();
  cmd->add_flag("--no-aggregation", args->no_aggregation, "One memory operation per request (no batches)");
  cmd->add_flag("--no-async", args->no_async, "One memory operation in flight at a time");
  cmd->add_flag("--no-static-cache", args->no_static, "Do not load read-only regions into the agent");
  cmd->add_flag("--no-dynamic-cache", args->no_dynamic, "No dynamic cache (and so no prefetch)");
  cmd->add_flag("--no-prefetch", args->no_prefetch, "Dynamic cache without background prefetch");
  cmd->add_flag("--no-adaptive", args->no_adaptive, "Keep the dynamic cache on whatever its hit rate");
  cmd->add_option("--static-cache-mib", args->static_cache_mib, "Static cache budget")->capture_default_str();
  cmd->add_option("--dynamic-cache-mib", args->dynamic_cache_mib, "Dynamic cache budget")->capture_default_str();
  cmd->add_option("--entry-kib", args->entry_kib, "Dynamic cache entry (16 pages of 64 KiB)")->capture_default_str();
  cmd->add_option("--prefetch-entries", args->prefetch_entries, "Entries prefetched after a requested page's")
      ->capture_default_str();
  cmd->add_option("--max-in-flight", args->max_in_flight, "Memory operations outstanding (async forwarding)")
      ->capture_default_str();
  cmd->add_option("--chunk-mib", args->chunk_mib, "Region reservation unit (spread over the memory nodes)")
      ->capture_default_str();
  cmd->add_option("--hit-rate-threshold", args->threshold,
                  "Dynamic cache off below this hit rate (seed 003 Eq. 3: fabric / agent bandwidth)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--fabric-gbps", args->fabric_gbps, "With --agent-gbps: the threshold from the two bandwidths");
  cmd->add_option("--agent-gbps", args->agent_gbps, "The agent's (host link's) bandwidth");
  cmd->add_option("--memory-timeout-ms", args->memory_timeout_ms, "One operation at a memory node")
      ->capture_default_str();
  cmd->add_option("--cpus", args->cpus, "CPU budget: the CPUs the agent may run on, e.g. 1 or 0,2-3")
      ->type_name("LIST");
  cmd->add_option("--poll-window-us", args->poll_window_us, "Adaptive polling window after traffic")
      ->capture_default_str();
  cmd->add_option("--poll-when-core-idle", args->poll_when_core_idle,
                  "Adaptive polling: poll within the window only while at most one thread of the machine waits for a\n"
                  "CPU and this one was not preempted, else sleep at once (docs/cluster.md)")
      ->capture_default_str()
      ->type_name("true|false");
  cmd->add_option("--log-level", args->log_level, "Least severe log lines printed on stderr")
      ->check(kLogLevel)
      ->type_name("error|warn|info|debug")
      ->capture_default_str();
  cmd->add_option("--port-file", args->port_file, "Once listening, write the port to this file")->type_name("PATH");
  cmd->add_option("--instance-id", args->instance_id,
                  "An id returned in `stats` as \"instance\": how `pulse cluster up` tells the process it started\n"
                  "from another one answering on the same port");
  AddSecretFlags(cmd, &args->secret);
  cmd->callback([args] { RunAgent(*args); });
}

}  // namespace pulse::tools
