#include "bench/suite_graph.h"

#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/graph_bench.h"
#include "pulse/graph/generators.h"
#include "pulse/graph/graph_io.h"

namespace pulse::bench {
namespace {

using nlohmann::json;

const std::vector<std::string> kApps = {"bfs", "pagerank", "radii", "bc", "cc"};
const std::vector<std::string> kSystems = {"local", "ssd", "memserver", "proxy", "proxy+async", "agent",
                                           "agent-no-static"};

// The result of (system, app), or null.
const json* Find(const json& results, const std::string& system, const std::string& app) {
  for (const json& r : results)
    if (r.value("system", "") == system && r.value("app", "") == app && !r.contains("error")) return &r;
  return nullptr;
}

double NodeBytes(const json& r) {
  double sum = 0;
  if (r.contains("memory_node_bytes"))
    for (const auto& [cls, bytes] : r["memory_node_bytes"].items()) sum += bytes.get<double>();
  return sum;
}

TargetCheck Target(std::string name, std::string app, std::string ratio_of, double goal, bool at_least) {
  TargetCheck t;
  t.name = std::move(name);
  t.regime = "graph";
  t.app = std::move(app);
  t.nodes = 1;
  t.ratio_of = std::move(ratio_of);
  t.goal = goal;
  t.at_least = at_least;
  return t;
}

void Judge(TargetCheck& t, double ratio) {
  t.ratio = ratio;
  t.met = t.at_least ? ratio >= t.goal : ratio <= t.goal;
  if (t.met) {
    t.shortfall = 1;
  } else if (t.at_least) {
    t.shortfall = ratio > 0 ? t.goal / ratio : INFINITY;
  } else {
    t.shortfall = t.goal > 0 ? ratio / t.goal : INFINITY;
  }
}

std::string Cell(const json* r, const std::string& key, const char* format = "{:.3g}") {
  if (r == nullptr || !r->contains(key) || !(*r)[key].is_number()) return "-";
  return fmt::format(fmt::runtime(format), (*r)[key].get<double>());
}

// Creates scripts/graphs.sh's rmat-<scale>.bin in `dir` unless it exists.
Status MakeGraph(uint32_t scale, const std::string& file) {
  if (std::filesystem::exists(file)) return Status::Ok();
  graph::RmatOptions r;
  r.scale = scale;
  r.edge_factor = 16;
  r.seed = 1;
  PULSE_ASSIGN_OR_RETURN(auto edges, graph::GenerateRmat(r));
  auto space = graph::MakeLocalArraySpace();
  PULSE_ASSIGN_OR_RETURN(graph::CsrGraph g, graph::CsrGraph::FromEdges(std::move(edges), true, *space));
  return graph::WriteBinaryGraph(g, file);
}

}  // namespace

std::vector<TargetCheck> GraphTargets(const json& results) {
  std::vector<TargetCheck> out;
  {
    TargetCheck t = Target("answers verified", "all", "verified / results", 1, true);
    size_t total = 0, verified = 0;
    for (const json& r : results) {
      ++total;
      if (r.value("verified", false)) ++verified;
    }
    if (total > 0) Judge(t, static_cast<double>(verified) / static_cast<double>(total));
    else t.note = "no results";
    out.push_back(t);
  }
  for (const std::string& app : kApps) {
    TargetCheck t = Target("proxy (aggregation + async) vs memserver", app, "proxy+async s / memserver s", 1.1, false);
    const json* p = Find(results, "proxy+async", app);
    const json* m = Find(results, "memserver", app);
    if (p != nullptr && m != nullptr && (*m)["seconds"].get<double>() > 0) {
      Judge(t, (*p)["seconds"].get<double>() / (*m)["seconds"].get<double>());
    } else {
      t.note = "proxy+async or memserver did not run";
    }
    out.push_back(t);
  }
  {
    TargetCheck t = Target("agent beats ssd", "all", "apps with agent s < ssd s", 4, true);
    int measured = 0, faster = 0;
    for (const std::string& app : kApps) {
      const json* a = Find(results, "agent", app);
      const json* s = Find(results, "ssd", app);
      if (a == nullptr || s == nullptr) continue;
      ++measured;
      if ((*a)["seconds"].get<double>() < (*s)["seconds"].get<double>()) ++faster;
    }
    if (measured > 0) Judge(t, faster);
    else t.note = "agent or ssd did not run";
    if (measured > 0 && measured < 5) t.note = fmt::format("only {} of 5 apps measured", measured);
    out.push_back(t);
  }
  {
    TargetCheck t = Target("static cache cuts memory-node traffic", "pagerank", "1 - agent / agent-no-static bytes",
                           0.2, true);
    const json* a = Find(results, "agent", "pagerank");
    const json* n = Find(results, "agent-no-static", "pagerank");
    if (a != nullptr && n != nullptr && NodeBytes(*n) > 0) {
      Judge(t, 1 - NodeBytes(*a) / NodeBytes(*n));
    } else {
      t.note = "agent or agent-no-static did not run";
    }
    out.push_back(t);
  }
  for (const std::string& app : {"pagerank", "cc"}) {
    TargetCheck t = Target("dynamic cache hit rate", app, "agent hits / lookups", 0.9, true);
    const json* a = Find(results, "agent", app);
    if (a != nullptr && a->contains("derived") && (*a)["derived"].contains("dynamic_hit_rate")) {
      const json& derived = (*a)["derived"];
      Judge(t, derived["dynamic_hit_rate"].get<double>());
      // The rate counts the lookups made while the cache was on; say what
      // it is over every lookup when the adaptive switch kept some out.
      if (derived.contains("dynamic_hit_rate_all_lookups") &&
          derived["dynamic_hit_rate_all_lookups"].get<double>() < derived["dynamic_hit_rate"].get<double>())
        t.note = fmt::format("{:.3f} over every lookup: the adaptive switch had the cache off for the rest",
                             derived["dynamic_hit_rate_all_lookups"].get<double>());
    } else if (a == nullptr) {
      t.note = "the agent did not run";
    } else {
      // Lookups are counted only while the cache is on.
      t.note = "no dynamic cache lookups: the adaptive switch kept the cache off";
    }
    out.push_back(t);
  }
  return out;
}

SuiteGraphStudy RunSuiteGraphStudy(const SuiteGraphOptions& o) {
  SuiteGraphStudy study;
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress("graph: " + line);
  };
  std::error_code ec;
  std::filesystem::create_directories(o.dir, ec);
  const std::string file = (std::filesystem::path(o.dir) / fmt::format("rmat-{}.bin", o.scale)).string();
  if (Status s = MakeGraph(o.scale, file); !s.ok()) {
    study.notes.push_back(fmt::format("cannot make {}: {}", file, s.ToString()));
    study.targets = GraphTargets(study.results);
    return study;
  }
  const uint64_t csr = std::filesystem::file_size(file, ec);
  const uint64_t static_mib = std::max<uint64_t>(1, (csr / 8 + (1 << 20) - 1) >> 20);
  const uint64_t dynamic_mib = std::max<uint64_t>(2, (csr / 4 + (1 << 20) - 1) >> 20);
  const std::string budgets = fmt::format("--static-cache-mib {} --dynamic-cache-mib {}", static_mib, dynamic_mib);
  struct Run {
    std::vector<std::string> systems;  // as `pulse bench graph` names them
    std::string label;                 // relabels proxy/agent results ("" : keep)
    std::string agent_flags;
    std::vector<std::string> apps = kApps;
  };
  const std::vector<Run> runs = {
      {{"local", "ssd", "memserver", "proxy"}, "", "--mode proxy"},
      {{"proxy"}, "proxy+async", "--no-static-cache --no-dynamic-cache"},
      {{"agent"}, "", "--mode agent " + budgets},
      {{"agent"}, "agent-no-static", "--mode agent --no-static-cache " + budgets, {"pagerank"}},
  };
  for (const Run& run : runs) {
    GraphBenchOptions g;
    g.graphs = {file};
    g.systems = run.systems;
    g.apps = run.apps;
    g.agent_flags = run.agent_flags;
    g.binary = o.binary;
    g.run_dir = o.run_dir;
    g.progress = [&](const std::string& line) { say(line); };
    const std::string what = run.label.empty() ? fmt::format("{}", fmt::join(run.systems, ",")) : run.label;
    say(fmt::format("{} (agent {})", what, run.agent_flags));
    Result<json> r = RunGraphBench(g);
    if (!r.ok()) {
      study.notes.push_back(fmt::format("{}: {}", what, r.status().ToString()));
      continue;
    }
    if (study.graph.is_null() && !(*r)["graphs"].empty()) study.graph = (*r)["graphs"][0];
    for (json x : (*r)["results"]) {
      if (!run.label.empty()) x["system"] = run.label;
      x["agent_flags"] = run.agent_flags;
      if (x.contains("error")) study.notes.push_back(fmt::format("{} {}: {}", x["system"].get<std::string>(),
                                                                 x["app"].get<std::string>(), x["error"].get<std::string>()));
      study.results.push_back(std::move(x));
    }
  }
  study.targets = GraphTargets(study.results);
  return study;
}

std::string GraphStudyMarkdown(const SuiteGraphStudy& s) {
  std::string md = "\n## Graph study (issue 17, seed 003 section V)\n\n";
  if (!s.graph.is_null())
    md += fmt::format("Graph {} ({} vertices, {} edges, {:.1f} MiB of CSR, synthetic R-MAT, symmetric); host buffer a "
                      "quarter of the CSR, 64 KiB pages, 2 threads, PageRank 10 iterations. Systems: proxy = `pulse "
                      "agent --mode proxy`; proxy+async = the agent with aggregation and asynchronous forwarding but no "
                      "caches; agent = every optimisation (flags in results.json); agent-no-static = the agent without "
                      "its static cache (PageRank only).\n\n",
                      std::filesystem::path(s.graph.value("file", "")).filename().string(),
                      s.graph.value("vertices", uint64_t{0}), s.graph.value("edges", uint64_t{0}),
                      s.graph.value("csr_bytes", 0.0) / 1048576.0);
  md += "Run time (seconds; `*` = not verified):\n\n| app |";
  std::string rule = "|---|";
  for (const std::string& sys : kSystems) {
    md += " " + sys + " |";
    rule += "---:|";
  }
  md += "\n" + rule + "\n";
  for (const std::string& app : kApps) {
    md += "| " + app + " |";
    for (const std::string& sys : kSystems) {
      const json* r = Find(s.results, sys, app);
      md += " " + Cell(r, "seconds") + (r != nullptr && !r->value("verified", false) ? "*" : "") + " |";
    }
    md += "\n";
  }
  md += "\nMemory-node traffic by class (MB), hit rates, CPU and host memory:\n\n| system | app | on demand | prefetch | "
        "write-back | static load | static hit | dynamic hit | host us/fetch | host CPU s | agent CPU s | peak RSS MiB |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const std::string& sys : kSystems) {
    for (const std::string& app : kApps) {
      const json* r = Find(s.results, sys, app);
      if (r == nullptr || sys == "local") continue;
      auto mb = [&](const char* cls) {
        if (!r->contains("memory_node_bytes")) return std::string("-");
        return fmt::format("{:.1f}", (*r)["memory_node_bytes"].value(cls, 0.0) / 1e6);
      };
      const json derived = r->value("derived", json::object());
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} |\n", sys, app, mb("on_demand"),
                        mb("prefetch"), mb("write_back"), mb("static_load"), Cell(&derived, "static_hit_rate"),
                        Cell(&derived, "dynamic_hit_rate"), Cell(&derived, "host_us_per_fetch", "{:.0f}"),
                        Cell(r, "host_cpu_seconds"), Cell(r, "agent_cpu_seconds"),
                        r->value("host_peak_rss_bytes", 0.0) / 1048576.0);
    }
  }
  md += "\nTargets (issue 17):\n\n| target | app | ratio | goal | verdict | note |\n|---|---|---|---:|---|---|\n";
  for (const TargetCheck& t : s.targets) {
    const std::string verdict = !t.ratio ? "not measured"
                                : t.met  ? "met"
                                         : (std::isfinite(t.shortfall) ? fmt::format("missed by {:.2f}x", t.shortfall)
                                                                       : std::string("missed"));
    md += fmt::format("| {} | {} | {} = {} | {} {} | {} | {} |\n", t.name, t.app, t.ratio_of,
                      t.ratio ? SuiteNumber(*t.ratio) : "-", t.at_least ? ">=" : "<=", SuiteNumber(t.goal), verdict,
                      t.note);
  }
  if (!s.notes.empty()) {
    md += "\nFailed runs:\n\n";
    for (const std::string& n : s.notes) md += "- " + n + "\n";
  }
  return md;
}

}  // namespace pulse::bench
