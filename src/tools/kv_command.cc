// `pulse kv serve`: a Redis-protocol server whose data lives in pulse far
// memory (include/pulse/resp/server.h, docs/resp.md).
#include <csignal>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cluster/config.h"
#include "cluster/launcher.h"
#include "pulse/client.h"
#include "pulse/resp/keyspace.h"
#include "pulse/resp/server.h"
#include "tools/commands.h"

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
      ->capture_default_str();
  serve->add_option("--max-batch", args->max_batch, "Requests run under one hold of the keyspace lock")
      ->capture_default_str();
  serve->add_option("--request-timeout-ms", args->request_timeout_ms,
                    "Far-memory request timeout (4 attempts, then an error reply)")
      ->capture_default_str();
  serve->callback([args] { Serve(*args); });
}

}  // namespace pulse::tools
