// results.json, report.md and the comparison table of `pulse bench suite`
// (src/bench/suite.h).
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/suite.h"
#include "bench/suite_apps.h"
#include "bench/suite_cxl.h"
#include "bench/suite_ycsb.h"
#include "bench/suite_graph.h"

namespace pulse::bench {
namespace {

using nlohmann::json;

template <typename T>
void AddUnique(std::vector<T>* v, const T& x) {
  if (std::find(v->begin(), v->end(), x) == v->end()) v->push_back(x);
}

std::string Num(double v) { return SuiteNumber(v); }

const SuiteRun* FindRun(const std::vector<SuiteRun>& runs, const std::string& study, const std::string& regime,
                        const std::string& app, uint32_t nodes, const std::string& system) {
  for (const SuiteRun& r : runs)
    if (r.study == study && r.regime == regime && r.options.app == app && r.options.memory_nodes == nodes &&
        r.options.system == system)
      return &r;
  return nullptr;
}

// A cell of a table: the figure of an ok run, else why there is none.
std::string Cell(const SuiteRun* r, double (*figure)(const SuiteRun&)) {
  if (r == nullptr) return "";
  if (r->outcome == SuiteRun::Outcome::kOk) return Num(figure(*r));
  return r->outcome == SuiteRun::Outcome::kSkipped ? "skipped" : "failed";
}

double Lat(const SuiteRun& r) { return r.result.closed.latency.mean_us; }
double P50(const SuiteRun& r) { return r.result.closed.latency.p50_us; }
double P99(const SuiteRun& r) { return r.result.closed.latency.p99_us; }
double Tput(const SuiteRun& r) { return Throughput(r.result); }
double MnCpu(const SuiteRun& r) { return r.result.mn_cpu_us_per_op.value_or(NAN); }
double Bytes(const SuiteRun& r) { return r.result.bytes_per_op; }
double Cross(const SuiteRun& r) { return r.result.cross_node_per_op; }
double PathMessages(const SuiteRun& r) { return r.result.critical_path_messages_per_op; }
double PathBytes(const SuiteRun& r) { return r.result.critical_path_bytes_per_op; }
double Projected(const SuiteRun& r) { return r.result.projected_rack_us.value_or(NAN); }

struct Axes {
  std::vector<std::string> regimes, apps, systems;
  std::vector<uint32_t> nodes;
};

Axes MatrixAxes(const std::vector<SuiteRun>& runs, const std::string& study = "matrix") {
  Axes a;
  for (const SuiteRun& r : runs) {
    if (r.study != study) continue;
    AddUnique(&a.regimes, r.regime);
    AddUnique(&a.apps, r.options.app);
    AddUnique(&a.systems, r.options.system);
    AddUnique(&a.nodes, r.options.memory_nodes);
  }
  return a;
}

// One table: rows systems, columns memory nodes (CHASE Figs. 4-7 as numbers).
void SystemByNodes(std::string* md, const std::vector<SuiteRun>& runs, const Axes& a, const std::string& regime,
                   const std::string& app, const char* title, double (*figure)(const SuiteRun&)) {
  *md += fmt::format("\n{}\n\n| system |", title);
  for (uint32_t n : a.nodes) *md += fmt::format(" {} node{} |", n, n == 1 ? "" : "s");
  *md += "\n|---|";
  for (size_t i = 0; i < a.nodes.size(); ++i) *md += "---:|";
  *md += "\n";
  for (const std::string& s : a.systems) {
    *md += fmt::format("| {} |", s);
    for (uint32_t n : a.nodes) *md += fmt::format(" {} |", Cell(FindRun(runs, "matrix", regime, app, n, s), figure));
    *md += "\n";
  }
}

std::string TargetRatio(const TargetCheck& t) { return t.ratio ? Num(*t.ratio) : "-"; }
std::string TargetVerdict(const TargetCheck& t) {
  if (!t.ratio) return "not measured";
  if (t.met) return "met";
  return std::isfinite(t.shortfall) ? fmt::format("missed by {:.2f}x", t.shortfall) : "missed";
}

void TargetsTable(std::string* md, const std::vector<TargetCheck>& targets, bool with_notes) {
  *md += "| target | regime | app | nodes | ratio | goal | verdict |";
  *md += with_notes ? " saturated resource / note |\n|---|---|---|---:|---|---:|---|---|\n"
                    : "\n|---|---|---|---:|---|---:|---|\n";
  for (const TargetCheck& t : targets) {
    *md += fmt::format("| {} | {} | {} | {} | {} = {} | {} {} | {} |", t.name, t.regime, t.app, t.nodes, t.ratio_of,
                       TargetRatio(t), t.at_least ? ">=" : "<=", Num(t.goal), TargetVerdict(t));
    if (with_notes) *md += fmt::format(" {} |", t.note);
    *md += "\n";
  }
}

json OptionsJson(const SuiteOptions& o) {
  return json{{"apps", o.apps},       {"systems", o.systems}, {"nodes", o.nodes},   {"regimes", o.regimes},
              {"studies", o.studies}, {"seconds", o.seconds}, {"sizes", o.sizes},   {"quick", o.quick},
              {"fabric_one_way_us", o.fabric.one_way_us}, {"fabric_gbps", o.fabric.gbps}};
}

}  // namespace

std::string SuiteNumber(double v) {
  if (!std::isfinite(v)) return "-";
  if (v >= 1000) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

json SuiteResultJson(const SuiteOptions& o, const SuiteResult& res) {
  json runs = json::array();
  for (const SuiteRun& r : res.runs) {
    json j = {{"study", r.study},
              {"regime", r.regime},
              {"variant", r.variant},
              {"app", r.options.app},
              {"system", r.options.system},
              {"memory_nodes", r.options.memory_nodes},
              {"outcome", SuiteOutcomeName(r.outcome)},
              {"reason", r.reason},
              {"wall_seconds", r.wall_seconds}};
    // The full configuration and result (`bench app --json`), also for a
    // skipped run (its figures are then zero).
    j["result"] = r.outcome == SuiteRun::Outcome::kOk ? AppBenchJson(r.options, r.result) : json();
    json config = AppBenchJson(r.options, AppBenchResult{});
    for (const char* k : {"app", "system", "memory_nodes", "workload", "distribution", "chain_length", "insert_fraction",
                          "offload_alloc", "scan_length", "allocation", "ucx_tls", "concurrency", "routing"})
      if (config.contains(k)) j["config"][k] = config[k];
    j["config"]["seconds"] = r.options.seconds;
    j["config"]["size"] = r.options.size;
    runs.push_back(std::move(j));
  }
  json targets = json::array();
  for (const TargetCheck& t : res.targets)
    targets.push_back({{"name", t.name},
                       {"regime", t.regime},
                       {"app", t.app},
                       {"nodes", t.nodes},
                       {"ratio_of", t.ratio_of},
                       {"ratio", t.ratio ? json(*t.ratio) : json()},
                       {"goal", t.goal},
                       {"at_least", t.at_least},
                       {"met", t.met},
                       {"shortfall", std::isfinite(t.shortfall) ? json(t.shortfall) : json()},
                       {"note", t.note}});
  json out = {{"options", OptionsJson(o)}, {"runs", runs}, {"targets", targets}, {"wall_seconds", res.wall_seconds}};
  for (const auto& [name, study] : res.app_studies) out[name] = study;
  if (res.graph) {
    json graph_targets = json::array();
    for (const TargetCheck& t : res.graph->targets)
      graph_targets.push_back({{"name", t.name}, {"app", t.app}, {"ratio_of", t.ratio_of},
                               {"ratio", t.ratio ? json(*t.ratio) : json()}, {"goal", t.goal}, {"at_least", t.at_least},
                               {"met", t.met}, {"note", t.note}});
    out["graph"] = {{"graph", res.graph->graph}, {"results", res.graph->results}, {"targets", graph_targets},
                    {"notes", res.graph->notes}};
  }
  if (res.pipelines) {
    const EngineBenchResult& e = *res.pipelines;
    out["pipelines"] = {{"pipelines", e.pipelines},
                        {"one_pipeline_hops_per_sec", e.engine_hops_per_sec},
                        {"all_pipelines_hops_per_sec", e.engine_all_pipelines_hops_per_sec},
                        {"native_hops_per_sec", e.native_hops_per_sec},
                        {"mlp_limit_hops_per_sec", e.mlp_limit_hops_per_sec},
                        {"nodes", e.nodes},
                        {"node_bytes", e.node_bytes}};
  } else if (!res.pipelines_note.empty()) {
    out["pipelines"] = {{"error", res.pipelines_note}};
  }
  return out;
}

std::string SuiteComparisonTable(const SuiteResult& res) {
  const Axes a = MatrixAxes(res.runs);
  std::string out;
  for (const std::string& regime : a.regimes) {
    out += fmt::format("regime {}: median latency us / throughput requests/s\n", regime);
    out += fmt::format("{:<11} {:>5}", "app", "nodes");
    for (const std::string& s : a.systems) out += fmt::format(" {:>19}", s);
    out += "\n";
    for (const std::string& app : a.apps)
      for (uint32_t n : a.nodes) {
        out += fmt::format("{:<11} {:>5}", app, n);
        for (const std::string& s : a.systems) {
          const SuiteRun* r = FindRun(res.runs, "matrix", regime, app, n, s);
          std::string cell = r == nullptr ? "" : Cell(r, P50);
          if (r != nullptr && r->outcome == SuiteRun::Outcome::kOk) cell += " / " + Num(Tput(*r));
          out += fmt::format(" {:>19}", cell);
        }
        out += "\n";
      }
    out += "\n";
  }
  out += "targets:\n";
  for (const TargetCheck& t : res.targets)
    out += fmt::format("  {:<22} {:<4} {:<10} {} node(s): {} = {} (goal {} {}): {}\n", t.name, t.regime, t.app, t.nodes,
                       t.ratio_of, TargetRatio(t), t.at_least ? ">=" : "<=", Num(t.goal), TargetVerdict(t));
  return out;
}

std::string SuiteReport(const SuiteOptions& o, const SuiteResult& res) {
  std::string md = "# pulse evaluation suite\n\n";
  const std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  size_t ok = 0, skipped = 0, failed = 0;
  double overhead = 0;
  for (const SuiteRun& r : res.runs) {
    ok += r.outcome == SuiteRun::Outcome::kOk;
    skipped += r.outcome == SuiteRun::Outcome::kSkipped;
    failed += r.outcome == SuiteRun::Outcome::kFailed;
    if (r.outcome == SuiteRun::Outcome::kOk)
      overhead += r.wall_seconds - r.result.closed.seconds - r.result.load_seconds;
  }
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  md += fmt::format(
      "{}, {} CPU(s), load average {:.1f} over the last 15 minutes at the end (other tenants' work shows as "
      "latency tails); `pulse bench suite{}`: {} runs ({} ok, {} skipped, {} failed) in {:.0f} s.\n"
      "Every run is `pulse bench app` on a fresh local cluster (switch + N memory-node processes on this host), "
      "closed loop with one outstanding request for {} s; traversals offloaded (`--mode offload`). Cluster start "
      "and stop cost {:.1f} s per run on average. {}.\n",
      when, sysconf(_SC_NPROCESSORS_ONLN), load[2], o.quick ? " --quick" : "", res.runs.size(), ok, skipped, failed,
      res.wall_seconds, o.seconds, ok ? overhead / static_cast<double>(ok) : 0.0, res.plots_note);

  const Axes a = MatrixAxes(res.runs);
  for (const std::string& regime : a.regimes) {
    auto tls = SuiteRegimeNamed(regime);
    md += fmt::format("\n## Matrix, regime `{}` (UCX_TLS={})\n", regime, tls.ok() ? tls->ucx_tls : "?");
    for (const std::string& app : a.apps) {
      md += fmt::format("\n### {}\n", app);
      SystemByNodes(&md, res.runs, a, regime, app, "Mean latency (us)", Lat);
      SystemByNodes(&md, res.runs, a, regime, app, "Median latency (us)", P50);
      SystemByNodes(&md, res.runs, a, regime, app, "p99 latency (us)", P99);
      SystemByNodes(&md, res.runs, a, regime, app, "Throughput (requests/s)", Tput);
      SystemByNodes(&md, res.runs, a, regime, app, "Memory-node CPU per request (us; energy stand-in)", MnCpu);
      SystemByNodes(&md, res.runs, a, regime, app, "Wire bytes per request", Bytes);
      SystemByNodes(&md, res.runs, a, regime, app, "Cross-node hops per request", Cross);
      SystemByNodes(&md, res.runs, a, regime, app, "Critical-path messages per request", PathMessages);
      SystemByNodes(&md, res.runs, a, regime, app,
                    "Projected rack latency (us; a model from the counts, not a measurement)", Projected);
    }
  }

  // Measured figures beside the counts and the model (docs/evaluation.md).
  md += fmt::format(
      "\n## Critical path and the rack projection\n\nPer request: the messages on its critical path (each "
      "request, continuation, re-issue and response leg; a hop via the switch is two, a one-sided access two), "
      "node crossings and critical-path bytes, as counted; then a projection of the latency on a rack: "
      "**a model, not a measurement**: messages x {} us one-way + bytes x 8 / {} Gbit/s + the measured "
      "memory-node CPU per request (docs/evaluation.md gives the formula and the papers' figures the "
      "defaults come from; `--fabric-one-way-us`, `--fabric-gbps`). Routing `direct` rows are the matrix; "
      "`switch` rows the switch_routing study.\n\n| regime | app | nodes | routing | system | p50 us (measured) | "
      "tput req/s (measured) | crit. path msgs | crossings | crit. path bytes | mn CPU us | projected rack us "
      "(model) |\n|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
      SuiteNumber(o.fabric.one_way_us), SuiteNumber(o.fabric.gbps));
  for (const std::string& study : {std::string("matrix"), std::string("switch_routing")}) {
    const Axes f = MatrixAxes(res.runs, study);
    for (const std::string& regime : f.regimes)
      for (const std::string& app : f.apps)
        for (uint32_t n : f.nodes)
          for (const std::string& s : f.systems) {
            const SuiteRun* r = FindRun(res.runs, study, regime, app, n, s);
            if (r == nullptr) continue;
            md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", regime, app, n,
                              study == "matrix" ? "direct" : "switch", s, Cell(r, P50), Cell(r, Tput),
                              Cell(r, PathMessages), Cell(r, Cross), Cell(r, PathBytes), Cell(r, MnCpu),
                              Cell(r, Projected));
          }
  }

  if (a.regimes.size() > 1) {
    md += "\n## Regimes side by side\n\nMedian latency (us) and throughput (requests/s) per regime; the last column "
          "is the first regime's latency over the second's.\n\n| app | system | nodes |";
    for (const std::string& g : a.regimes) md += fmt::format(" p50 {} | tput {} |", g, g);
    md += " p50 ratio |\n|---|---|---:|";
    for (size_t i = 0; i < a.regimes.size(); ++i) md += "---:|---:|";
    md += "---:|\n";
    for (const std::string& app : a.apps)
      for (const std::string& s : a.systems)
        for (uint32_t n : a.nodes) {
          md += fmt::format("| {} | {} | {} |", app, s, n);
          std::vector<const SuiteRun*> rs;
          for (const std::string& g : a.regimes) {
            const SuiteRun* r = FindRun(res.runs, "matrix", g, app, n, s);
            rs.push_back(r);
            md += fmt::format(" {} | {} |", Cell(r, P50), Cell(r, Tput));
          }
          const bool both = rs[0] && rs[1] && rs[0]->outcome == SuiteRun::Outcome::kOk &&
                            rs[1]->outcome == SuiteRun::Outcome::kOk && P50(*rs[1]) > 0;
          md += fmt::format(" {} |\n", both ? Num(P50(*rs[0]) / P50(*rs[1])) : "-");
        }
  }

  // pulse vs pulse-acc (000 Fig. 9): from the matrix, or its own runs.
  md += "\n## pulse vs pulse-acc (seed 000 Fig. 9)\n\npulse-acc returns to the CPU node at a memory-node boundary; "
        "pulse continues from memory node to memory node (through the switch under routing switch). Median latency (us).\n\n| regime | app | nodes | pulse p50 | pulse-acc p50 | ratio | "
        "pulse tput | pulse-acc tput | pulse hops/req |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const std::string& study : {std::string("matrix"), std::string("pulse_vs_acc")}) {
    const Axes f = MatrixAxes(res.runs, study);
    for (const std::string& regime : f.regimes)
      for (const std::string& app : f.apps)
        for (uint32_t n : f.nodes) {
          if (n < 2) continue;
          const SuiteRun* p = FindRun(res.runs, study, regime, app, n, "pulse");
          const SuiteRun* q = FindRun(res.runs, study, regime, app, n, "pulse-acc");
          if (p == nullptr || q == nullptr) continue;
          const bool both = p->outcome == SuiteRun::Outcome::kOk && q->outcome == SuiteRun::Outcome::kOk;
          md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", regime, app, n, Cell(p, P50),
                            Cell(q, P50), both && P50(*q) > 0 ? Num(P50(*p) / P50(*q)) : "-", Cell(p, Tput),
                            Cell(q, Tput), Cell(p, Cross));
        }
  }

  md += "\n## Sensitivity studies (seed 000 appendix C), system pulse unless noted\n";
  const std::map<std::string, std::string> what = {
      {"traversal_length", "Traversal length: webservice chain length (users per bucket) and wiredtiger records per "
                           "scan, 1 memory node (Fig. 4(a))."},
      {"allocation", "Allocation policy: wiredtiger's B+tree placed round robin (uniform) or partitioned by key "
                     "halves, 2 memory nodes (Fig. 5). btrdb's tree is always time-partitioned."},
      {"distribution", "Zipfian (0.99) vs uniform keys, webservice, 1 memory node (Fig. 3(a)). pulse keeps no "
                       "CPU-node cache, so only a caching system can profit from skew."},
      {"saturation", "Saturating load: several closed-loop clients (bench app --concurrency, each with its own "
                     "Client and copy of the data) against 2 memory nodes, pulse and rpc; the memory-node CPU target "
                     "is computed from these runs."},
      {"writes", "Fraction of requests inserting a new user, with offloaded allocation (inserts carry "
                 "pre-allocated regions) and without (each new chain node returns to the CPU node), webservice, 1 "
                 "memory node (Fig. 3(b))."}};
  for (const auto& [study, text] : what) {
    bool any = false;
    for (const SuiteRun& r : res.runs) any |= r.study == study;
    if (!any) continue;
    md += fmt::format("\n### {}\n\n{}\n\n| app | system | nodes | setting | lat mean | lat p99 | tput | "
                      "iterations/req | hops/req | mn CPU us/req | lat p50 |\n|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
                      study, text);
    for (const SuiteRun& r : res.runs) {
      if (r.study != study) continue;
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.options.app, r.options.system,
                        r.options.memory_nodes, r.variant, Cell(&r, Lat), Cell(&r, P99), Cell(&r, Tput),
                        Cell(&r, [](const SuiteRun& x) { return x.result.iterations_per_op.value_or(NAN); }),
                        Cell(&r, Cross), Cell(&r, MnCpu), Cell(&r, P50));
    }
  }
  if (res.pipelines || !res.pipelines_note.empty()) {
    md += "\n### pipelines\n\nThe memory node runs one memory pipeline (with its interleaved logic pipeline) on its "
          "network thread (include/pulse/engine.h): more pipelines per host are more memory nodes. So this study "
          "is the engine alone (`pulse bench engine --pipelines 2`, a random list of 256 B nodes), one pipeline "
          "per thread (Fig. 4(b)).\n\n";
    if (res.pipelines) {
      const EngineBenchResult& e = *res.pipelines;
      md += fmt::format("| pipelines | hops/s |\n|---:|---:|\n| 1 | {} |\n| {} | {} |\n\nPlain chase {} hops/s, "
                        "prefetch-interleaved chase (MLP limit) {} hops/s, {} nodes.\n",
                        Num(e.engine_hops_per_sec), e.pipelines, Num(e.engine_all_pipelines_hops_per_sec),
                        Num(e.native_hops_per_sec), Num(e.mlp_limit_hops_per_sec), e.nodes);
    } else {
      md += "Not measured: " + res.pipelines_note + "\n";
    }
  }

  md += "\n## Targets (issue 6)\n\nEach ratio divides figures of two runs of this suite (same regime, app and node "
        "count). Latency is the closed-loop median (p50): on a shared machine the mean carries other tenants' "
        "scheduling stalls (see the p99 tables), which no system causes; the tables give both. The memory-node CPU target asks for saturating load: where the "
        "saturation study ran pulse and rpc (several closed-loop clients, 2 memory nodes) the ratio comes from "
        "those runs and says how many clients; elsewhere from the one-client matrix runs. Where a target is missed, the note names what bounds pulse's requests, from the "
        "run's own memory-node CPU, wire bytes and hops per request.\n\n";
  TargetsTable(&md, res.targets, true);

  if (res.graph) md += GraphStudyMarkdown(*res.graph);
  for (const auto& [name, study] : res.app_studies)
    md += name == "cxl"    ? SuiteCxlStudyMarkdown(study)
          : name == "ycsb" ? SuiteYcsbStudyMarkdown(study)
                           : SuiteAppStudyMarkdown(name, study);

  md += "\n## Skipped, failed and repeated runs\n\nA run that fails (not one a system rejects) is run once "
        "more; its first error is kept.\n\n";
  bool any = false;
  for (const SuiteRun& r : res.runs) {
    if (r.outcome == SuiteRun::Outcome::kOk && r.reason.empty()) continue;
    any = true;
    md += fmt::format("- {} {} {} {} {} node(s) {}: {}: {}\n", r.study, r.regime, r.options.app, r.options.system,
                      r.options.memory_nodes, r.variant, SuiteOutcomeName(r.outcome), r.reason);
  }
  if (!any) md += "None.\n";
  return md;
}

}  // namespace pulse::bench
