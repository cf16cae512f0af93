#include "bench/graph_counters.h"

#include <chrono>
#include <map>

#include <fmt/format.h>

#include "cluster/control_session.h"

namespace pulse::bench {
namespace {

constexpr auto kControlTimeout = std::chrono::seconds(5);

double Number(const nlohmann::json& j, const std::string& key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

}  // namespace

const std::vector<std::string>& TrafficClasses() {
  static const std::vector<std::string> classes = {"on_demand", "prefetch", "write_back", "static_load"};
  return classes;
}

NamedCounters MemoryAgentCounters(const nlohmann::json& farmem) {
  NamedCounters out;
  for (const std::string& c : TrafficClasses()) {
    out.emplace_back("node_bytes_" + c, Number(farmem, c + "_bytes"));
    out.emplace_back("node_ops_" + c, Number(farmem, c + "_ops"));
  }
  out.emplace_back("node_bytes_preload", Number(farmem, "preload_bytes"));
  return out;
}

NamedCounters OffloadAgentCounters(const nlohmann::json& c) {
  NamedCounters out;
  for (const char* name : {"host_read_requests", "host_write_requests", "static_hits", "static_misses",
                           "dynamic_hits", "dynamic_misses", "dynamic_lookups_off", "prefetches", "prefetch_skipped", "memory_ops",
                           "cpu_seconds", "read_request_micros", "read_requests_timed", "dynamic_turned_off",
                           "dynamic_turned_on", "dynamic_hits_filling", "dynamic_misses_evicted",
                           "dynamic_hits_read_only", "dynamic_misses_read_only", "dynamic_evicted_unused",
                           "dynamic_evictions", "forward_timed", "forward_handoff_micros", "forward_node_micros",
                           "forward_return_micros"})
    out.emplace_back(fmt::format("agent_{}", name), Number(c, name));
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& bytes = c.is_object() && c.contains("memory_bytes_by_class") ? c["memory_bytes_by_class"] : empty;
  const nlohmann::json& ops = c.is_object() && c.contains("memory_ops_by_class") ? c["memory_ops_by_class"] : empty;
  const nlohmann::json& micros =
      c.is_object() && c.contains("memory_op_micros_by_class") ? c["memory_op_micros_by_class"] : empty;
  for (const std::string& k : TrafficClasses()) {
    out.emplace_back("agent_memory_bytes_" + k, Number(bytes, k));
    out.emplace_back("agent_memory_ops_" + k, Number(ops, k));
    out.emplace_back("agent_memory_op_micros_" + k, Number(micros, k));
  }
  return out;
}

nlohmann::json DerivedFigures(const NamedCounters& changes) {
  std::map<std::string, double> c(changes.begin(), changes.end());
  nlohmann::json out = nlohmann::json::object();
  auto ratio = [&](const std::string& name, double num, double den) {
    if (den > 0) out[name] = num / den;
  };
  ratio("static_hit_rate", c["agent_static_hits"], c["agent_static_hits"] + c["agent_static_misses"]);
  ratio("dynamic_hit_rate", c["agent_dynamic_hits"], c["agent_dynamic_hits"] + c["agent_dynamic_misses"]);
  // Over every lookup, those made while the adaptive switch had the cache
  // off included (dynamic_hit_rate counts only those made while it was on).
  ratio("dynamic_hit_rate_all_lookups", c["agent_dynamic_hits"],
        c["agent_dynamic_hits"] + c["agent_dynamic_misses"] + c["agent_dynamic_lookups_off"]);
  ratio("dynamic_hit_rate_read_only", c["agent_dynamic_hits_read_only"],
        c["agent_dynamic_hits_read_only"] + c["agent_dynamic_misses_read_only"]);
  ratio("host_us_per_fetch", c["host_fetch_micros"], c["pages_fetched"]);
  ratio("host_us_per_write_back", c["host_write_back_micros"], c["pages_written_back"]);
  ratio("agent_us_per_read", c["agent_read_request_micros"], c["agent_read_requests_timed"]);
  for (const char* stage : {"handoff", "node", "return"})
    ratio(fmt::format("agent_us_per_forward_{}", stage), c[fmt::format("agent_forward_{}_micros", stage)],
          c["agent_forward_timed"]);
  for (const std::string& k : TrafficClasses())
    ratio("agent_us_per_" + k + "_op", c["agent_memory_op_micros_" + k], c["agent_memory_ops_" + k]);
  // The host<->agent hop of a page read (farmem::AgentHopStats), per read.
  for (const char* stage : {"send", "to_agent", "agent", "from_agent", "deliver"})
    ratio(fmt::format("hop_us_{}", stage), c[fmt::format("hop_{}_ns", stage)] / 1000.0, c["hop_reads_timed"]);
  ratio("hop_slept_share", c["hop_reads_slept"], c["hop_reads_timed"]);
  ratio("hop_us_from_agent_slept", c["hop_from_agent_slept_ns"] / 1000.0, c["hop_reads_slept"]);
  ratio("hop_us_from_agent_polled", (c["hop_from_agent_ns"] - c["hop_from_agent_slept_ns"]) / 1000.0,
        c["hop_reads_timed"] - c["hop_reads_slept"]);
  return out;
}

Result<std::unique_ptr<ClusterCounterProbe>> ClusterCounterProbe::Create(std::string switch_address,
                                                                        std::string agent_address) {
  std::unique_ptr<ClusterCounterProbe> p(new ClusterCounterProbe());
  PULSE_ASSIGN_OR_RETURN(p->session_, cluster::ControlSession::Create());
  p->switch_address_ = std::move(switch_address);
  p->agent_address_ = std::move(agent_address);
  return p;
}

ClusterCounterProbe::~ClusterCounterProbe() = default;

Result<NamedCounters> ClusterCounterProbe::Read() {
  std::map<std::string, double> sum;
  std::vector<std::string> order;
  auto add = [&](const NamedCounters& list) {
    for (const auto& [name, value] : list) {
      if (!sum.count(name)) order.push_back(name);
      sum[name] += value;
    }
  };
  PULSE_ASSIGN_OR_RETURN(nlohmann::json sw, session_->Call(switch_address_, "stats", kControlTimeout));
  if (sw.contains("memnodes") && sw["memnodes"].is_array()) {
    for (const nlohmann::json& n : sw["memnodes"]) {
      const std::string address = n.value("address", "");
      Result<nlohmann::json> m = session_->Call(address, "stats", kControlTimeout);
      if (!m.ok())
        return Status::FromCode(m.status().code(), fmt::format("memory node at {}: stats: {}", address, m.status().message()));
      const nlohmann::json& counters = (*m)["counters"];
      add(MemoryAgentCounters(counters.is_object() && counters.contains("farmem") ? counters["farmem"]
                                                                                 : nlohmann::json::object()));
    }
  }
  if (!agent_address_.empty()) {
    Result<nlohmann::json> a = session_->Call(agent_address_, "stats", kControlTimeout);
    if (!a.ok())
      return Status::FromCode(a.status().code(), fmt::format("pulse agent at {}: stats: {}", agent_address_, a.status().message()));
    add(OffloadAgentCounters((*a)["counters"]));
  }
  NamedCounters out;
  for (const std::string& name : order) out.emplace_back(name, sum[name]);
  return out;
}

std::vector<std::string> GraphBenchFailures(const nlohmann::json& report) {
  std::vector<std::string> out;
  if (!report.contains("results") || !report["results"].is_array()) return {"the report has no results"};
  for (const nlohmann::json& r : report["results"]) {
    const std::string what = fmt::format("{} {} {}", r.value("graph", "?"), r.value("system", "?"), r.value("app", "?"));
    if (r.contains("error")) {
      out.push_back(fmt::format("{}: {}", what, r["error"].is_string() ? r["error"].get<std::string>() : "error"));
    } else if (!r.value("verified", false)) {
      out.push_back(fmt::format("{}: not verified ({})", what, r.value("verify_error", "differs from the in-memory run")));
    }
  }
  return out;
}

}  // namespace pulse::bench
