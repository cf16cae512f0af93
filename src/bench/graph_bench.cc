#include "bench/graph_bench.h"

#include <chrono>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "bench/graph_spaces.h"
#include "node/node_control.h"
#include "pulse/graph/apps.h"
#include "pulse/graph/graph_io.h"

namespace pulse::bench {
namespace {

struct Memory {
  uint64_t rss = 0, peak = 0;
};

// VmRSS and VmHWM of /proc/self/status, in bytes.
Memory ReadMemory() {
  Memory m;
  std::ifstream in("/proc/self/status");
  std::string key;
  uint64_t kb;
  std::string unit;
  while (in >> key) {
    if (key == "VmRSS:" && in >> kb >> unit) m.rss = kb * 1024;
    else if (key == "VmHWM:" && in >> kb >> unit) m.peak = kb * 1024;
  }
  return m;
}

// Starts a new peak (VmHWM = VmRSS from now on).
void ResetPeakMemory() { std::ofstream("/proc/self/clear_refs") << "5"; }

graph::VertexId HighestDegreeVertex(const graph::CsrGraph& g) {
  graph::VertexId best = 0;
  for (graph::VertexId v = 0; v < g.num_vertices(); ++v)
    if (g.out_degree(v) > g.out_degree(best)) best = v;
  return best;
}

struct Measured {
  Result<graph::AppResult> result = Status::Internal("not run");
  double seconds = 0, cpu_seconds = 0;
  Memory memory;
  std::vector<std::pair<std::string, double>> counters;
};

Measured RunMeasured(graph::App app, const graph::CsrGraph& g, GraphSpace& space, graph::Workers& workers,
                     graph::AppOptions options) {
  Measured m;
  auto before = space.Counters();
  ResetPeakMemory();
  double cpu0 = node::ProcessCpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  options.on_computed = [&] {
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.cpu_seconds = node::ProcessCpuSeconds() - cpu0;
    m.memory = ReadMemory();
    m.counters = space.Counters();
  };
  m.result = graph::RunApp(app, g, space.space(), workers, options);
  // Counters as changes over the run.
  std::map<std::string, double> base(before.begin(), before.end());
  for (auto& [name, value] : m.counters) value -= base[name];
  return m;
}

}  // namespace

Result<nlohmann::json> RunGraphBench(const GraphBenchOptions& o) {
  auto progress = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  if (o.graphs.empty()) return Status::InvalidArgument("bench graph: --graph names no file");
  std::vector<graph::App> apps;
  for (const auto& name : o.apps) {
    PULSE_ASSIGN_OR_RETURN(graph::App app, graph::AppFromName(name));
    apps.push_back(app);
  }
  auto known = GraphSystems();
  for (const auto& s : o.systems)
    if (std::find(known.begin(), known.end(), s) == known.end())
      return Status::InvalidArgument(fmt::format("bench graph: system '{}' is not one of local, memserver, proxy, agent, ssd", s));

  nlohmann::json out = {{"graphs", nlohmann::json::array()}, {"results", nlohmann::json::array()}};
  graph::Workers workers(o.threads);
  for (const auto& file : o.graphs) {
    // The in-memory run: the reference every system's answer must equal.
    PULSE_ASSIGN_OR_RETURN(std::unique_ptr<GraphSpace> local, MakeGraphSpace("local", {}));
    PULSE_ASSIGN_OR_RETURN(graph::CsrGraph g, graph::LoadGraph(file, o.symmetric, local->space()));
    graph::AppOptions options;
    options.root = o.root != 0 ? o.root : HighestDegreeVertex(g);
    options.pagerank_max_iterations = o.pagerank_iterations;
    options.pagerank_epsilon = 0;
    options.radii_seed = o.radii_seed;
    uint64_t csr_bytes = g.footprint_bytes();
    out["graphs"].push_back({{"file", file}, {"vertices", g.num_vertices()}, {"edges", g.num_edges()},
                             {"symmetric", g.symmetric()}, {"csr_bytes", csr_bytes}, {"root", options.root}});
    progress(fmt::format("{}: {} vertices, {} edges, {:.1f} MiB of CSR", file, g.num_vertices(), g.num_edges(),
                         csr_bytes / 1048576.0));
    std::map<graph::App, Measured> reference;
    for (graph::App app : apps) {
      reference[app] = RunMeasured(app, g, *local, workers, options);
      if (!reference[app].result.ok())
        progress(fmt::format("{} local {}: {}", file, graph::AppName(app), reference[app].result.status().ToString()));
    }
    GraphSpaceOptions space_options;
    space_options.buffer_bytes = o.buffer_bytes != 0 ? o.buffer_bytes : std::max<uint64_t>(csr_bytes / 4, o.page_bytes);
    space_options.page_bytes = o.page_bytes;
    space_options.switch_address = o.switch_address;
    space_options.progress = o.progress;

    for (const auto& system : o.systems) {
      auto report = [&](graph::App app, const Measured& m, const graph::AppResult* expected) {
        nlohmann::json r = {{"graph", file},
                            {"system", system},
                            {"app", graph::AppName(app)},
                            {"threads", o.threads},
                            {"buffer_bytes", system == "local" ? 0 : space_options.buffer_bytes}};
        if (!m.result.ok()) {
          r["error"] = m.result.status().ToString();
          r["verified"] = false;
          progress(fmt::format("{} {} {}: {}", file, system, graph::AppName(app), m.result.status().ToString()));
        } else {
          Status same = expected == nullptr ? Status::FailedPrecondition("no in-memory answer to compare with")
                                            : graph::CompareResults(*expected, *m.result);
          r["seconds"] = m.seconds;
          r["rounds"] = m.result->rounds;
          r["host_rss_bytes"] = m.memory.rss;
          r["host_peak_rss_bytes"] = m.memory.peak;
          r["host_cpu_seconds"] = m.cpu_seconds;
          r["verified"] = same.ok();
          if (!same.ok()) r["verify_error"] = same.ToString();
          nlohmann::json counters = nlohmann::json::object();
          for (const auto& [name, value] : m.counters) counters[name] = value;
          r["counters"] = counters;
          progress(fmt::format("{} {} {}: {:.3f} s, {} rounds, rss {:.1f} MiB (peak {:.1f}), cpu {:.2f} s, verified: {}",
                               file, system, graph::AppName(app), m.seconds, m.result->rounds, m.memory.rss / 1048576.0,
                               m.memory.peak / 1048576.0, m.cpu_seconds, same.ok() ? "true" : "false"));
        }
        out["results"].push_back(std::move(r));
      };
      if (system == "local") {
        // The reference runs are the local system's measured runs; the
        // answer compared with itself checks nothing, so one more run is
        // compared (parallel runs must agree with each other).
        for (graph::App app : apps) {
          const Measured& ref = reference[app];
          if (!ref.result.ok()) {
            report(app, ref, nullptr);
            continue;
          }
          Measured again = RunMeasured(app, g, *local, workers, options);
          report(app, again, &*ref.result);
        }
        continue;
      }
      auto space = MakeGraphSpace(system, space_options);
      if (!space.ok()) {
        for (graph::App app : apps) {
          Measured failed;
          failed.result = space.status();
          report(app, failed, nullptr);
        }
        continue;
      }
      auto far = graph::LoadGraph(file, o.symmetric, (*space)->space());
      if (!far.ok()) {
        for (graph::App app : apps) {
          Measured failed;
          failed.result = far.status();
          report(app, failed, nullptr);
        }
        continue;
      }
      for (graph::App app : apps) {
        Measured m = RunMeasured(app, *far, **space, workers, options);
        const auto& ref = reference[app].result;
        report(app, m, ref.ok() ? &*ref : nullptr);
      }
    }
  }
  return out;
}

}  // namespace pulse::bench
