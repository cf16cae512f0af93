// The `rpc` and `rpc-wimpy` systems (seed 000 section 6, seed 001 section
// 7): every traversal is a native handler on the memory node, run to
// completion per request (src/rpc/handlers); at a memory-node boundary the
// reply returns to the CPU node, which re-issues the call to the owner of
// the next pointer.  rpc-wimpy runs the same handlers stretched to an
// emulated ~1 GHz core (src/rpc/core_clock.h).  By default requests and
// replies cross the switch process, as every packet crosses the ToR switch
// in a rack (--rpc-path switch; docs/rpc.md).
#include <fmt/format.h>

#include "bench/app_systems.h"
#include "pulse/rpc_apps.h"
#include "pulse/rpc_ds.h"

namespace pulse::bench {
namespace {

class RpcSystem : public apps::AppSystem {
 public:
  RpcSystem(std::string name, std::unique_ptr<Client> client, std::unique_ptr<RpcClient> rpc,
            const RpcOptions& options)
      : name_(std::move(name)), client_(std::move(client)), rpc_(std::move(rpc)), options_(options) {}
  std::string name() const override { return name_; }
  Client* client() override { return client_.get(); }

  Result<std::optional<uint64_t>> HashLookup(ds::UnorderedMap& map, uint64_t key) override {
    return rpc::Find(*rpc_, map, key);
  }
  Result<std::vector<apps::ScanRecord>> BTreeScan(ds::BTree& tree, uint64_t start, uint32_t count) override {
    return rpc::WtScan(*rpc_, tree.root(), start, count);
  }
  Result<ds::Aggregate> TsvAggregate(apps::TsvTree& tree, uint64_t lo, uint64_t hi) override {
    return rpc::TsvAggregate(*rpc_, tree, lo, hi);
  }
  apps::AppSystemStats Stats() const override {
    apps::AppSystemStats s;
    AddRpcStats(*rpc_, *client_, options_, &s);
    return s;
  }

 private:
  std::string name_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<RpcClient> rpc_;  // destroyed first: it hooks into client_
  RpcOptions options_;
};

Result<std::unique_ptr<apps::AppSystem>> Make(const AppSystemConfig& config, bool wimpy) {
  auto options = AppRpcOptions(config, wimpy);
  if (!options.ok()) return options.status();
  ClientOptions co = config.client;
  if (config.mode) co.dispatch.mode = *config.mode;  // the applications' loading (inserts)
  auto client = Client::Connect(co);
  if (!client.ok()) return client.status();
  auto rpc = RpcClient::Create(client->get(), *options);
  if (!rpc.ok()) return rpc.status();
  return std::unique_ptr<apps::AppSystem>(
      new RpcSystem(wimpy ? "rpc-wimpy" : "rpc", std::move(*client), std::move(*rpc), *options));
}

}  // namespace

Result<RpcOptions> AppRpcOptions(const AppSystemConfig& config, bool wimpy) {
  RpcOptions o;
  if (config.rpc_path == "switch") {
    o.path = RpcPath::kSwitch;
  } else if (config.rpc_path != "direct") {
    return Status::InvalidArgument(fmt::format("--rpc-path '{}' (switch or direct)", config.rpc_path));
  }
  o.wimpy = wimpy;
  if (wimpy) {
    if (!(config.rpc_core_ghz >= 0.001 && config.rpc_core_ghz <= 65.0))
      return Status::InvalidArgument(
          fmt::format("--rpc-core-ghz {} must be in [0.001, 65]", config.rpc_core_ghz));
    o.core_ghz = config.rpc_core_ghz;
  }
  return o;
}

void AddRpcStats(const RpcClient& rpc, const Client& client, const RpcOptions& options,
                 apps::AppSystemStats* stats) {
  const RpcCounters& c = rpc.counters();
  // Each answered round trip: request and reply, each through the switch
  // process (two messages) on RpcPath::kSwitch.  Re-sends after a timeout are
  // not on the path of the answer.
  const uint64_t per_leg = options.path == RpcPath::kSwitch ? 2 : 1;
  const net::Counters& n = client.net_counters();
  stats->counters.emplace_back(kCriticalPathMessages, 2 * per_leg * (c.requests_sent - c.retransmissions));
  stats->counters.emplace_back(kCriticalPathBytes, per_leg * (n.bytes_sent + n.bytes_received));
  stats->reissues += c.node_crossings;
  stats->counters.insert(stats->counters.end(), {{"rpc_calls", c.calls},
                                                 {"rpc_requests", c.requests_sent},
                                                 {"rpc_node_crossings", c.node_crossings},
                                                 {"rpc_continues", c.continues},
                                                 {"rpc_retransmissions", c.retransmissions},
                                                 {"rpc_timeouts", c.timeouts}});
  stats->settings.emplace_back("rpc_via_switch", options.path == RpcPath::kSwitch ? 1.0 : 0.0);
  if (options.wimpy) stats->settings.emplace_back("rpc_core_ghz", options.core_ghz);
}

Result<std::unique_ptr<apps::AppSystem>> MakeRpcSystem(const AppSystemConfig& config) { return Make(config, false); }
Result<std::unique_ptr<apps::AppSystem>> MakeRpcWimpySystem(const AppSystemConfig& config) {
  return Make(config, true);
}

}  // namespace pulse::bench
