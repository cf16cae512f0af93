#include "cluster/status.h"

#include <algorithm>

#include <fmt/format.h>

#include "cluster/control_session.h"
#include "common/bounded_file.h"

namespace pulse::cluster {

using nlohmann::json;

std::vector<NodeStatus> QueryStatus(const ClusterState& state, std::chrono::milliseconds timeout) {
  std::vector<NodeStatus> out;
  auto session = ControlSession::Create(state.ucx_tls);
  for (const NodeProcess& n : state.nodes) {
    NodeStatus s;
    s.node = &n;
    s.running = IsRunning(n.process);
    if (!s.running) {
      s.error = "process not running";
    } else if (!session.ok()) {
      s.error = session.status().ToString();
    } else {
      auto stats = (*session)->Call(n.address, "stats", timeout);
      if (stats.ok() && !AnsweredBy(n, *stats)) {
        s.error = fmt::format("another process answers at {} (instance '{}', not '{}')", n.address,
                              InstanceOf(*stats), n.instance);
      } else if (stats.ok()) {
        s.answering = true;
        s.stats = std::move(*stats);
      } else {
        s.error = stats.status().ToString();
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool Healthy(const std::vector<NodeStatus>& nodes) {
  for (const NodeStatus& n : nodes)
    if (!n.running || !n.answering) return false;
  return !nodes.empty();
}

std::vector<std::string> Problems(const std::vector<NodeStatus>& nodes) {
  std::vector<std::string> out;
  for (const NodeStatus& s : nodes) {
    if (s.answering && s.stats.value("insecure", false))
      out.push_back(fmt::format("{}: insecure (started with --insecure and no cluster secret: lets in any peer "
                                "without credentials)", s.node->name));
  }
  for (const NodeStatus& s : nodes) {
    if (!s.answering || s.node->role != Role::kMemNode) continue;
    const json& c = s.stats["counters"];
    const uint64_t bytes = c.value("pool_bytes", uint64_t{0});
    const uint64_t free = c.value("pool_free", uint64_t{0});
    if (bytes == 0 || free * 20 >= bytes) continue;
    out.push_back(fmt::format("{}: pool full ({} of {} used, largest free {})", s.node->name,
                              HumanBytes(c.value("pool_used", uint64_t{0})), HumanBytes(bytes),
                              HumanBytes(c.value("pool_largest_free", uint64_t{0}))));
  }
  return out;
}

std::string TenantUseTable(const std::vector<NodeStatus>& nodes) {
  std::string out;
  for (const NodeStatus& s : nodes) {
    if (!s.answering || s.node->role != Role::kMemNode) continue;
    const json& tenants = s.stats["counters"].value("tenants", json::object());
    for (const auto& [tenant, use] : tenants.items())
      out += fmt::format("{} tenant {}: {} session, {} durable ({} allocations)\n", s.node->name, tenant,
                         HumanBytes(use.value("session_bytes", uint64_t{0})),
                         HumanBytes(use.value("durable_bytes", uint64_t{0})), use.value("allocations", uint64_t{0}));
  }
  return out;
}

json StatusJson(const ClusterState& state, const std::vector<NodeStatus>& nodes) {
  json list = json::array();
  for (const NodeStatus& s : nodes) {
    json j = {{"name", s.node->name},
              {"role", RoleName(s.node->role)},
              {"address", s.node->address},
              {"pid", s.node->process.pid},
              {"log", s.node->log},
              {"alive", s.running},
              {"answering", s.answering}};
    if (s.node->role == Role::kMemNode) j["node"] = s.node->node;
    if (!s.error.empty()) j["error"] = s.error;
    if (s.answering) {
      j["counters"] = s.stats.value("counters", json::object());
      if (s.stats.contains("memnodes")) j["memnodes"] = s.stats["memnodes"];
    }
    list.push_back(std::move(j));
  }
  return json{{"cluster", state.name},
              {"state_file", state.state_file},
              {"config", state.config_source},
              {"switch_address", state.switch_address},
              {"started_unix", state.started_unix},
              {"healthy", Healthy(nodes)},
              {"problems", Problems(nodes)},
              {"nodes", list}};
}

std::string HumanBytes(uint64_t bytes) { return DescribeBytes(bytes); }

std::string FarmemLine(const NodeProcess& n, const json& c) {
  if (n.role == Role::kAgent)
    return fmt::format("  {}: {} host pages read, {} written; static hits {}, dynamic hits {} ({:.0f}%), {} batches, "
                       "{:.1f} CPU s\n",
                       n.name, c.value("host_pages_read", uint64_t{0}), c.value("host_pages_written", uint64_t{0}),
                       c.value("static_hits", uint64_t{0}), c.value("dynamic_hits", uint64_t{0}),
                       100 * c.value("dynamic_hit_rate", 0.0), c.value("batches", uint64_t{0}),
                       c.value("cpu_seconds", 0.0));
  if (!c.contains("farmem")) return "";
  const json& f = c["farmem"];
  auto bytes = [&](const char* key) { return f.value(key, uint64_t{0}); };
  const uint64_t total = bytes("on_demand_bytes") + bytes("prefetch_bytes") + bytes("write_back_bytes") +
                         bytes("static_load_bytes") + bytes("preload_bytes");
  if (total == 0) return "";
  return fmt::format("  {} far memory: on-demand {}, prefetch {}, write-back {}, static load {}, preload {}\n", n.name,
                     HumanBytes(bytes("on_demand_bytes")), HumanBytes(bytes("prefetch_bytes")),
                     HumanBytes(bytes("write_back_bytes")), HumanBytes(bytes("static_load_bytes")),
                     HumanBytes(bytes("preload_bytes")));
}

std::string RequestPathLine(const NodeProcess& n, const json& c) {
  if (n.role != Role::kMemNode || !c.contains("ring")) return "";
  const json& r = c["ring"];
  const uint64_t rings = r.value("rings", uint64_t{0});
  const uint64_t native = r.value("rings_native", uint64_t{0});
  const uint64_t double_layer = r.value("rings_double_layer", uint64_t{0});
  std::string out = fmt::format(
      "  {} request path: ring on {} of {} connections ({} by one-sided puts, {} by pulse messages; "
      "{} double-layer), messages on the rest; {} ring entries, {} malformed, {} sleeps, {} wake-ups\n",
      n.name, rings, r.value("connections", uint64_t{0}), native, rings - std::min(rings, native),
      std::min(rings, double_layer), r.value("entries", uint64_t{0}), r.value("malformed", uint64_t{0}),
      r.value("sleeps", uint64_t{0}), r.value("wakes", uint64_t{0}));
  const json by_connection = r.value("by_connection", json::object());
  for (const auto& [ep, path] : by_connection.items()) {
    if (!path.is_object()) continue;
    const std::string who = path.contains("cpu_node") && path["cpu_node"].is_number_integer()
                                ? fmt::format(" (CPU node {})", path["cpu_node"].get<int64_t>())
                                : "";
    out += fmt::format("    connection {}{}: ring, {} layout, answers by {}\n", ep, who,
                       path.value("layout", std::string("?")), path.value("answers", std::string("?")));
  }
  return out;
}

// How a memory node's chain replica talked to its neighbours (docs/tx.md
// "Transport"): by ring or as messages, and why not by ring; empty if it
// sent nothing to another replica.
std::string ReplicaPathLine(const NodeProcess& n, const json& c) {
  if (n.role != Role::kMemNode || !c.contains("tx") || !c["tx"].contains("replica_rings")) return "";
  const json& tx = c["tx"];
  const json& r = tx["replica_rings"];
  const uint64_t by_ring = r.value("by_ring", uint64_t{0}), by_message = r.value("by_message", uint64_t{0});
  if (!tx.value("rings_between_replicas", true)) {
    const uint64_t sent = tx.value("forwards_out", uint64_t{0}) + tx.value("acks_out", uint64_t{0});
    if (sent == 0) return "";
    return fmt::format("  {} chain replica: {} forwards and acknowledgements, all as messages (tx.replica_path = "
                       "\"am\")\n",
                       n.name, sent);
  }
  if (by_ring + by_message == 0) return "";
  std::string why;
  const json paths = r.value("paths", json::object());
  for (const auto& [ep, path] : paths.items())
    if (path.is_string() && path.get<std::string>() != "ring") why += fmt::format("; connection {}: {}", ep, path.get<std::string>());
  return fmt::format("  {} chain replica: {} forwards and {} acknowledgements by ring, {} as messages; "
                     "rings to neighbours: {}{}\n",
                     n.name, tx.value("forwards_by_ring", uint64_t{0}), tx.value("acks_by_ring", uint64_t{0}),
                     by_message, r.value("rings_opened", uint64_t{0}), why);
}

std::string StatusTable(const ClusterState& state, const std::vector<NodeStatus>& nodes) {
  std::string out = fmt::format("cluster '{}' (state {})\n", state.name, state.state_file);
  out += fmt::format("{:<11} {:<8} {:<21} {:>7} {:<5} {:>10} {:>11} {:>9} {:>10} {:>10} {}\n", "node", "role",
                     "address", "pid", "alive", "requests", "iterations", "forwards", "bytes in", "bytes out",
                     "engine");
  for (const NodeStatus& s : nodes) {
    const NodeProcess& n = *s.node;
    std::string requests = "-", iterations = "-", forwards = "-", in = "-", outb = "-", engine = "-";
    const char* alive = !s.running ? "no" : s.answering ? "yes" : "mute";
    if (s.answering) {
      const json& c = s.stats["counters"];
      auto num = [&](const char* key) { return std::to_string(c.value(key, uint64_t{0})); };
      requests = num("requests");
      in = HumanBytes(c.value("bytes_in", uint64_t{0}));
      outb = HumanBytes(c.value("bytes_out", uint64_t{0}));
      if (n.role == Role::kSwitch) {
        forwards = num("forwards");
      } else if (n.role == Role::kMemNode) {
        iterations = num("iterations");
        forwards = num("not_local");
        engine = fmt::format("{}/{} busy, {} queued, {} prefetches ({} ignored)",
                             c.value("engine_active", uint64_t{0}), c.value("engine_capacity", uint64_t{0}),
                             c.value("engine_queued", uint64_t{0}), c.value("prefetches_issued", uint64_t{0}),
                             c.value("prefetches_ignored", uint64_t{0}));
      }
    }
    out += fmt::format("{:<11} {:<8} {:<21} {:>7} {:<5} {:>10} {:>11} {:>9} {:>10} {:>10} {}\n", n.name,
                       RoleName(n.role), n.address, n.process.pid, alive, requests, iterations, forwards, in,
                       outb, engine);
    if (s.running && !s.answering) out += fmt::format("  {}: {}\n", n.name, s.error);
    if (s.answering) out += FarmemLine(n, s.stats["counters"]);
    if (s.answering) out += RequestPathLine(n, s.stats["counters"]);
    if (s.answering) out += ReplicaPathLine(n, s.stats["counters"]);
  }
  const std::string use = TenantUseTable(nodes);
  if (!use.empty()) out += "pool use by tenant:\n" + use;
  for (const std::string& p : Problems(nodes)) out += "problem: " + p + "\n";
  return out;
}

}  // namespace pulse::cluster
