// pulse cluster drop: an operator frees a tenant's far memory, or one of its
// durable roots, on every memory node of a running cluster
// (docs/cluster.md "Memory lifetimes").
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cluster/config.h"
#include "cluster/control_session.h"
#include "cluster/launcher.h"
#include "cluster/status.h"
#include "tools/commands.h"

namespace pulse::tools {
namespace {

struct DropArgs {
  std::string config;
  std::string state;
  uint32_t tenant = 0;
  std::string root;  // empty: every allocation of the tenant
  uint32_t timeout_ms = 5000;
};

[[noreturn]] void Fail(const Status& s) {
  std::cerr << "pulse cluster drop: " << s.message() << "\n";
  throw CLI::RuntimeError(1);
}

void RunDrop(const DropArgs& args) {
  std::string path = args.state;
  if (path.empty()) {
    auto config = cluster::LoadClusterConfigOrDefault(args.config);
    if (!config.ok()) Fail(config.status());
    path = config->StateFile();
  }
  auto state = cluster::ReadState(path);
  if (!state.ok()) Fail(state.status());
  auto session = cluster::ControlSession::Create(state->ucx_tls);
  if (!session.ok()) Fail(session.status());
  const std::string op = args.root.empty() ? "tenant_drop" : "root_drop";
  nlohmann::json fields{{"tenant", args.tenant}};
  if (!args.root.empty()) fields["root"] = args.root;
  const std::string what =
      args.root.empty() ? fmt::format("tenant {}", args.tenant) : fmt::format("root '{}' of tenant {}", args.root, args.tenant);
  uint64_t freed = 0;
  int failed = 0, found = 0;
  for (const cluster::NodeProcess& n : state->nodes) {
    if (n.role != cluster::Role::kMemNode) continue;
    auto r = (*session)->Call(n.address, op, std::chrono::milliseconds(args.timeout_ms), fields);
    if (!r.ok()) {
      if (r.status().code() == Status::Code::kNotFound) {
        std::cout << fmt::format("{:<11} no {}\n", n.name, what);
        continue;
      }
      std::cerr << fmt::format("{:<11} {}\n", n.name, r.status().ToString());
      ++failed;
      continue;
    }
    ++found;
    const uint64_t bytes = r->value("freed_bytes", uint64_t{0});
    freed += bytes;
    std::cout << fmt::format("{:<11} freed {} ({} allocations)\n", n.name, cluster::HumanBytes(bytes),
                             r->value("allocations", uint64_t{0}));
  }
  std::cout << fmt::format("dropped {}: {} freed\n", what, cluster::HumanBytes(freed));
  if (failed > 0) throw CLI::RuntimeError(1);
  if (!args.root.empty() && found == 0) Fail(Status::NotFound(fmt::format("no memory node holds {}", what)));
}

}  // namespace

void AddAdminCommands(CLI::App& app) {
  CLI::App* cluster = app.get_subcommand("cluster");
  auto args = std::make_shared<DropArgs>();
  CLI::App* cmd = cluster->add_subcommand(
      "drop",
      "Free far memory of a tenant on every memory node: all of it (sessions of live clients too,\n"
      "whose next accesses then fail), or with --root only one durable root's allocations");
  cmd->add_option("--config", args->config, "Cluster description (TOML), as for `pulse cluster up`");
  cmd->add_option("--state", args->state, "State file of the cluster (default: the config's)");
  cmd->add_option("--tenant", args->tenant, "The tenant whose memory is dropped")
      ->required()
      ->check(CLI::Range(0u, UINT32_MAX));
  cmd->add_option("--root", args->root, "Drop only this durable root (Client::PublishRoot) and its memory");
  cmd->add_option("--timeout-ms", args->timeout_ms, "How long to wait for each memory node's answer")
      ->check(CLI::Range(1u, 600000u))
      ->capture_default_str();
  cmd->callback([args] { RunDrop(*args); });
}

}  // namespace pulse::tools
