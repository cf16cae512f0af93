// `pulse kv serve`: a Redis-protocol server whose data lives in pulse far
// memory (include/pulse/resp/server.h, docs/resp.md).
#include <csignal>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#ifdef PULSE_WITH_BENCHMARKS
#include "bench/resp_bench.h"
#endif
#include "cluster/config.h"
#include "cluster/keys.h"
#include "cluster/launcher.h"
#include "cluster/process.h"
#include "pulse/client.h"
#include "pulse/resp/keyspace.h"
#include "pulse/resp/server.h"
#include "tools/commands.h"
#include "tools/nothing_ran.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

struct KvServeArgs {
  std::string listen = "127.0.0.1:6380";
  std::string switch_address;  // empty: the config's (state file first)
  std::string config;          // empty: the default cluster (`pulse cluster up`)
  std::string root;            // empty: <cluster dir>/resp.root
  uint64_t max_value_mib = 64;
  uint32_t max_batch = 512;
  uint32_t request_timeout_ms = 500;
  std::string port_file;       // written once listening (as the nodes' --port-file)
};

resp::Server* g_server = nullptr;
void OnSignal(int) {
  if (g_server != nullptr) g_server->RequestStop();
}

[[noreturn]] void Fail(const Status& s) {
  std::cerr << "pulse kv serve: " << s.ToString() << "\n";
  throw CLI::RuntimeError(1);
}

void Serve(const KvServeArgs& a) {
  auto config = cluster::LoadClusterConfigOrDefault(a.config);
  if (!config.ok()) Fail(config.status());
  cluster::UseClusterSecret(*config);  // the client derives its tenant's key from it
  std::string switch_address = a.switch_address;
  if (switch_address.empty()) {
    // A running cluster's state file has the ports it bound (port 0 in the
    // config); otherwise the config's address.
    auto state = cluster::ReadState(config->StateFile());
    switch_address = state.ok() ? state->switch_address : config->SwitchAddress();
  }
  const std::string root = a.root.empty() ? config->ClusterDir() + "/resp.root" : a.root;
  ClientOptions co;
  co.switch_address = switch_address;
  co.request_timeout = std::chrono::milliseconds(a.request_timeout_ms);
  auto client = Client::Connect(co);
  if (!client.ok()) Fail(client.status());
  resp::KeyspaceOptions ko;
  ko.max_value_bytes = a.max_value_mib << 20;
  auto keyspace = resp::Keyspace::OpenOrCreate(client->get(), root, ko);
  if (!keyspace.ok()) Fail(keyspace.status());
  resp::ServerOptions so;
  so.listen = a.listen;
  so.max_batch = a.max_batch;
  so.limits.max_bulk_bytes = ko.max_value_bytes;
  auto server = resp::Server::Listen(client->get(), keyspace->get(), so);
  if (!server.ok()) Fail(server.status());
  g_server = server->get();
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  const size_t colon = a.listen.rfind(':');
  std::cerr << fmt::format("[kv] listening on {}:{} (switch {}, keyspace root {} -> {:#x})", a.listen.substr(0, colon),
                           (*server)->port(), switch_address, root, (*keyspace)->directory())
            << std::endl;
  if (!a.port_file.empty()) {
    Status written = cluster::WritePortFile(a.port_file, (*server)->port());
    if (!written.ok()) Fail(written);
  }
  Status s = (*server)->Run();
  g_server = nullptr;
  if (!s.ok()) Fail(s);
  std::cerr << "[kv] stopped" << std::endl;
}

}  // namespace

void AddKvCommands(CLI::App& app) {
  CLI::App* kv = app.add_subcommand("kv", "A Redis-protocol front end on pulse far memory");
  kv->require_subcommand(1);
  auto args = std::make_shared<KvServeArgs>();
  CLI::App* serve = kv->add_subcommand("serve", "Serve the Redis protocol (RESP2/3) from the cluster's far memory");
  serve->add_option("--listen", args->listen, "host:port to accept clients on (port 0: any)")->capture_default_str();
  serve->add_option("--switch", args->switch_address, "The cluster's switch (default: from --config)");
  serve->add_option("--config", args->config, "Cluster description (default: the one of `pulse cluster up`)");
  serve->add_option("--root", args->root,
                    "File holding the keyspace's far address (default: <cluster dir>/resp.root); servers "
                    "given the same file serve the same data");
  serve->add_option("--max-value-mib", args->max_value_mib, "Largest value (and request argument), MiB")
      ->capture_default_str()
      ->check(Within(1, 4096));
  serve->add_option("--max-batch", args->max_batch, "Requests run under one hold of the keyspace lock")
      ->capture_default_str()
      ->check(Within(1, 1e6));
  serve->add_option("--request-timeout-ms", args->request_timeout_ms,
                    "Far-memory request timeout (4 attempts, then an error reply)")
      ->capture_default_str()
      ->check(Within(1, kMaxTimeoutMs));
  serve->add_option("--port-file", args->port_file, "Write the port bound here once listening");
  serve->callback([args] { Serve(*args); });
}

#ifdef PULSE_WITH_BENCHMARKS
void AddRespBench(CLI::App& bench) {
  auto o = std::make_shared<bench::RespBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "resp", "redis-benchmark GET/SET against `pulse kv serve` and a local redis-server, side by side");
  cmd->add_option("--switch", o->switch_address, "Use this cluster (default: start one with 2 memory nodes)");
  cmd->add_option("--requests", o->requests, "redis-benchmark -n, per test")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--clients", o->clients, "redis-benchmark -c")->capture_default_str()
      ->check(Within(1, 10000));
  cmd->add_option("--keyspace", o->keyspace, "redis-benchmark -r")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--pipelines", o->pipelines, "redis-benchmark -P values")->capture_default_str()
      ->check(Within(1, 10000));
  cmd->add_option("--tests", o->tests, "redis-benchmark -t")->capture_default_str();
  cmd->add_option("--value-bytes", o->value_bytes, "redis-benchmark -d")->capture_default_str()
      ->check(Within(1, 1 << 26));
  cmd->add_option("--run-dir", o->run_dir, "Where a started cluster writes its logs");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([o, json] {
    o->progress = [](const std::string& line) { std::cerr << "[bench resp] " << line << std::endl; };
    auto r = bench::RunRespBench(*o);
    if (!r.ok()) {
      std::cerr << "pulse bench resp: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    RequireWorkDone("bench resp", r->contains("runs") ? (*r)["runs"].size() : 0, "the number of redis-benchmark runs");
    if (*json) {
      std::cout << r->dump(2) << std::endl;
      return;
    }
    for (const auto& run : (*r)["runs"]) {
      for (const auto& [test, figures] : run["pulse"].items()) {
        const auto& redis = run["redis"].contains(test) ? run["redis"][test] : nlohmann::json::object();
        std::cout << fmt::format("-P {:<3} {:<6} pulse {:>10.0f} req/s p50 {:.3f} p99 {:.3f} ms | redis {:>10.0f} "
                                 "req/s p50 {:.3f} p99 {:.3f} ms | ratio {:.3f}\n",
                                 run["pipeline"].get<int>(), test, figures["rps"].get<double>(),
                                 figures["p50_ms"].get<double>(), figures["p99_ms"].get<double>(),
                                 redis.value("rps", 0.0), redis.value("p50_ms", 0.0), redis.value("p99_ms", 0.0),
                                 run["pulse_over_redis_rps"].value(test, 0.0));
      }
    }
  });
}
#endif  // PULSE_WITH_BENCHMARKS

}  // namespace pulse::tools
