#include "bench/graph_bench.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "bench/graph_counters.h"
#include "bench/graph_spaces.h"
#include "node/node_control.h"
#include "pulse/graph/apps.h"
#include "pulse/graph/graph_io.h"
#include "pulse/graph/offloaded_bfs.h"

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

// The in-memory answers wait in files while the far systems run, so that
// they do not count in those systems' host memory (an answer is ~20 bytes
// per vertex).  Read back after each measured run's figures are taken.
class SpilledAnswer {
 public:
  static Result<SpilledAnswer> Write(const graph::AppResult& a, const std::string& dir) {
    SpilledAnswer s;
    s.app_ = a.app;
    s.rounds_ = a.rounds;
    s.path_ = fmt::format("{}/{}", dir, graph::AppName(a.app));
    std::ofstream out(s.path_, std::ios::binary | std::ios::trunc);
    auto put = [&](const auto& v) {
      uint64_t size = v.size();
      out.write(reinterpret_cast<const char*>(&size), sizeof(size));
      out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(size * sizeof(v[0])));
    };
    put(a.labels);
    put(a.values);
    put(a.parents);
    put(a.sources);
    if (!out) return Status::IoError(fmt::format("bench graph: cannot write '{}'", s.path_));
    return s;
  }
  Result<graph::AppResult> Read() const {
    graph::AppResult a;
    a.app = app_;
    a.rounds = rounds_;
    std::ifstream in(path_, std::ios::binary);
    auto get = [&](auto& v) {
      uint64_t size = 0;
      in.read(reinterpret_cast<char*>(&size), sizeof(size));
      if (!in) return;
      v.resize(size);
      in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(size * sizeof(v[0])));
    };
    get(a.labels);
    get(a.values);
    get(a.parents);
    get(a.sources);
    if (!in) return Status::IoError(fmt::format("bench graph: cannot read '{}'", path_));
    return a;
  }

 private:
  graph::App app_ = graph::App::kBfs;
  uint32_t rounds_ = 0;
  std::string path_;
};

// Bytes the memory nodes served or stored over a run, by class: for proxy
// and agent the memory agents' counters (every byte goes through them); for
// memserver the host agent's (its reads and writes are one-sided, unseen by
// the memory agent: on demand and write-back only).  Null for the others.
nlohmann::json MemoryNodeTraffic(const std::string& system, const nlohmann::json& counters) {
  auto get = [&](const std::string& k) { return counters.contains(k) ? counters[k].get<double>() : 0.0; };
  nlohmann::json out;
  if (system == "memserver") {
    out = {{"on_demand", get("host_bytes_on_demand")}, {"prefetch", 0.0}, {"write_back", get("host_bytes_write_back")},
           {"static_load", 0.0}};
  } else if (system == "proxy" || system == "agent") {
    for (const std::string& c : TrafficClasses()) out[c] = get("node_bytes_" + c);
  }
  return out;
}

// One result: the figures of a measured run, or its error.
nlohmann::json Report(const std::string& file, const std::string& system, graph::App app, uint32_t threads,
                      uint64_t buffer_bytes, const Measured& m, const Result<graph::AppResult>* expected,
                      const std::function<void(const std::string&)>& progress) {
  nlohmann::json r = {{"graph", file},   {"system", system}, {"app", graph::AppName(app)},
                      {"threads", threads}, {"buffer_bytes", buffer_bytes}};
  if (!m.result.ok()) {
    r["error"] = m.result.status().ToString();
    r["verified"] = false;
    progress(fmt::format("{} {} {}: {}", file, system, graph::AppName(app), m.result.status().ToString()));
    return r;
  }
  Status same = expected == nullptr || !expected->ok()
                    ? Status::FailedPrecondition("no in-memory answer to compare with")
                    : graph::CompareResults(**expected, *m.result);
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
  r["derived"] = DerivedFigures(m.counters);
  nlohmann::json traffic = MemoryNodeTraffic(system, counters);
  if (!traffic.is_null()) r["memory_node_bytes"] = traffic;
  if (counters.contains("agent_cpu_seconds")) r["agent_cpu_seconds"] = counters["agent_cpu_seconds"];
  std::string extra;
  if (!traffic.is_null()) {
    extra += ", node MB";
    for (const auto& [cls, bytes] : traffic.items()) extra += fmt::format(" {} {:.1f}", cls, bytes.get<double>() / 1e6);
  }
  for (const char* k : {"static_hit_rate", "dynamic_hit_rate", "dynamic_hit_rate_all_lookups", "dynamic_hit_rate_read_only",
                        "host_us_per_fetch"})
    if (r["derived"].contains(k)) extra += fmt::format(", {} {:.3g}", k, r["derived"][k].get<double>());
  progress(fmt::format("{} {} {}: {:.3f} s, {} rounds, rss {:.1f} MiB (peak {:.1f}), cpu {:.2f} s{}, verified: {}", file,
                       system, graph::AppName(app), m.seconds, m.result->rounds, m.memory.rss / 1048576.0,
                       m.memory.peak / 1048576.0, m.cpu_seconds, extra, same.ok() ? "true" : "false"));
  return r;
}

// What the far systems need of a graph's in-memory run.
struct Reference {
  graph::AppOptions options;
  uint64_t csr_bytes = 0;
  std::map<graph::App, Result<SpilledAnswer>> answers;
};

// Loads `file` into local memory and runs every app there: the answers the
// other systems are verified against.  With `measure_local`, each app runs
// once more, measured and verified against the first (parallel runs must
// agree), as the `local` system's results.  The local graph is released
// before returning, so it does not count in the far systems' memory.
Result<Reference> RunInMemory(const GraphBenchOptions& o, const std::string& file, const std::vector<graph::App>& apps,
                              bool measure_local, const std::string& spill_dir, graph::Workers& workers,
                              nlohmann::json& out) {
  auto progress = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<GraphSpace> local, MakeGraphSpace("local", {}));
  PULSE_ASSIGN_OR_RETURN(graph::CsrGraph g, graph::LoadGraph(file, o.symmetric, local->space()));
  Reference ref;
  ref.options.root = o.root != 0 ? o.root : HighestDegreeVertex(g);
  ref.options.pagerank_max_iterations = o.pagerank_iterations;
  ref.options.pagerank_epsilon = 0;
  ref.options.radii_seed = o.radii_seed;
  ref.csr_bytes = g.footprint_bytes();
  out["graphs"].push_back({{"file", file}, {"vertices", g.num_vertices()}, {"edges", g.num_edges()},
                           {"symmetric", g.symmetric()}, {"csr_bytes", ref.csr_bytes}, {"root", ref.options.root}});
  progress(fmt::format("{}: {} vertices, {} edges, {:.1f} MiB of CSR", file, g.num_vertices(), g.num_edges(),
                       ref.csr_bytes / 1048576.0));
  for (graph::App app : apps) {
    Measured first = RunMeasured(app, g, *local, workers, ref.options);
    if (measure_local) {
      Measured again = first.result.ok() ? RunMeasured(app, g, *local, workers, ref.options) : first;
      out["results"].push_back(Report(file, "local", app, o.threads, 0, again, &first.result, progress));
    }
    ref.answers.emplace(app, first.result.ok() ? SpilledAnswer::Write(*first.result, spill_dir)
                                               : Result<SpilledAnswer>(first.result.status()));
  }
  return ref;
}

// Every app of `system` on `file`, in a space of its own.
void RunOnSystem(const GraphBenchOptions& o, const std::string& file, const std::string& system,
                 const std::vector<graph::App>& apps, const Reference& ref, const GraphSpaceOptions& space_options,
                 graph::Workers& workers, nlohmann::json& out) {
  auto progress = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  auto fail_all = [&](const Status& s) {
    Measured failed;
    failed.result = s;
    for (graph::App app : apps)
      out["results"].push_back(Report(file, system, app, o.threads, space_options.buffer_bytes, failed, nullptr, progress));
  };
  if (GraphSystemNeedsAgent(system) && space_options.agent_address.empty())
    return fail_all(Status::InvalidArgument(
        fmt::format("graph system '{}' pages through `pulse agent`: give its address (--agent) or start one with the cluster (--agent-flags)", system)));
  auto space = MakeGraphSpace(system, space_options);
  if (!space.ok()) return fail_all(space.status());
  // The system's fixed host memory (process, fabric, agent threads) before
  // any array: a run's peak minus this is its buffer and working state.
  const uint64_t rss_at_start = ReadMemory().rss;
  auto g = graph::LoadGraph(file, o.symmetric, (*space)->space());
  if (!g.ok()) return fail_all(g.status());
  for (graph::App app : apps) {
    progress(fmt::format("{} {} {}: running", file, system, graph::AppName(app)));
    Measured m = RunMeasured(app, *g, **space, workers, ref.options);
    const auto& spilled = ref.answers.at(app);
    Result<graph::AppResult> expected = spilled.ok() ? spilled->Read() : Result<graph::AppResult>(spilled.status());
    out["results"].push_back(
        Report(file, system, app, o.threads, space_options.buffer_bytes, m, &expected, progress));
    out["results"].back()["host_rss_at_start_bytes"] = rss_at_start;
  }
}

// The `offload` system: BFS with its neighbour scans run at the memory
// nodes (pulse/graph/offloaded_bfs.h); the other apps are not offloaded.
// The graph is loaded locally (the offsets stay at the CPU node), its edges
// copied into far memory, then each BFS is measured from the first scan to
// the parents read back.  Counters: scans sent, memory-node iterations,
// vertices returned, and the fabric bytes this process sent and received.
void RunOffloaded(const GraphBenchOptions& o, const std::string& file, const std::vector<graph::App>& apps,
                  const Reference& ref, const std::string& switch_address, graph::Workers& workers,
                  nlohmann::json& out) {
  auto progress = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  auto report = [&](graph::App app, const Measured& m, const Result<graph::AppResult>* expected) {
    out["results"].push_back(Report(file, "offload", app, o.threads, 0, m, expected, progress));
  };
  auto fail_all = [&](const Status& s) {
    Measured failed;
    failed.result = s;
    for (graph::App app : apps) report(app, failed, nullptr);
  };
  ClientOptions client_options;
  client_options.switch_address = switch_address;
  auto client = Client::Connect(client_options);
  if (!client.ok()) return fail_all(client.status());
  auto local = graph::MakeLocalArraySpace();
  auto g = graph::LoadGraph(file, o.symmetric, *local);
  if (!g.ok()) return fail_all(g.status());
  auto bfs = graph::OffloadedBfs::Upload(**client, *g);
  if (!bfs.ok()) return fail_all(bfs.status());
  for (graph::App app : apps) {
    Measured m;
    if (app != graph::App::kBfs) {
      m.result = Status::InvalidArgument(fmt::format("offload: only bfs is offloaded, not {}", graph::AppName(app)));
      report(app, m, nullptr);
      continue;
    }
    graph::OffloadedBfsStats before = bfs->stats();
    net::Counters net_before = (*client)->net_counters();
    ResetPeakMemory();
    double cpu0 = node::ProcessCpuSeconds();
    auto t0 = std::chrono::steady_clock::now();
    m.result = bfs->Run(ref.options.root);
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.cpu_seconds = node::ProcessCpuSeconds() - cpu0;
    m.memory = ReadMemory();
    const graph::OffloadedBfsStats& after = bfs->stats();
    const net::Counters& net_after = (*client)->net_counters();
    m.counters = {{"traversals", after.traversals - before.traversals},
                  {"iterations", after.iterations - before.iterations},
                  {"vertices_returned", after.vertices_returned - before.vertices_returned},
                  {"fabric_bytes_sent", net_after.bytes_sent - net_before.bytes_sent},
                  {"fabric_bytes_received", net_after.bytes_received - net_before.bytes_received}};
    const auto& spilled = ref.answers.at(app);
    Result<graph::AppResult> expected = spilled.ok() ? spilled->Read() : Result<graph::AppResult>(spilled.status());
    report(app, m, &expected);
  }
}

}  // namespace

Result<std::string> DefaultAgentFlags(const GraphBenchOptions& o) {
  auto wants = [&](const char* system) { return std::find(o.systems.begin(), o.systems.end(), system) != o.systems.end(); };
  const bool proxy = wants("proxy") && o.proxy_agent_address.empty() && o.agent_address.empty();
  const bool agent = wants("agent") && o.agent_address.empty();
  if (!o.agent_flags.empty() || !o.switch_address.empty() || (!proxy && !agent)) return o.agent_flags;
  if (proxy && agent)
    return Status::InvalidArgument(
        "bench graph: systems proxy and agent each need a `pulse agent` of their own mode: run them one after the "
        "other (--system proxy, then --system agent), or give --agent-flags, or --agent and --proxy-agent");
  return std::string(proxy ? "--mode proxy" : "--mode agent");
}

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
      return Status::InvalidArgument(fmt::format("bench graph: system '{}' is not one of local, memserver, proxy, agent, ssd, offload", s));
  PULSE_ASSIGN_OR_RETURN(const std::string agent_flags, DefaultAgentFlags(o));

  // The far systems that page to memory nodes share one cluster, started
  // here (or joined) with a pool for the largest graph, its applications'
  // arrays and page rounding.
  cluster::ClusterGuard guard;
  std::string switch_address = o.switch_address;
  std::string started_agent;  // the agent of a cluster started here
  bool needs_cluster = std::any_of(o.systems.begin(), o.systems.end(), GraphSystemNeedsCluster);
  if (needs_cluster) {
    uint64_t largest = 0;
    for (const auto& file : o.graphs) {
      struct stat st;
      if (stat(file.c_str(), &st) == 0) largest = std::max<uint64_t>(largest, st.st_size);
    }
    BenchClusterOptions c = BenchClusterOptionsFor("bench-graph", o);
    c.memory_nodes = 1;
    c.pool_mib = static_cast<uint32_t>(3 * largest / 1048576 + 256);
    if (o.switch_address.empty() && !agent_flags.empty()) c.agent_flags = agent_flags;
    PULSE_ASSIGN_OR_RETURN(switch_address, StartOrJoinBenchCluster(c, o.switch_address, &guard));
    progress(fmt::format("cluster at {} ({} MiB pool)", switch_address, c.pool_mib));
    if (guard.state() != nullptr) {
      for (const cluster::NodeProcess& n : guard.state()->nodes)
        if (n.role == cluster::Role::kAgent) {
          started_agent = n.address;
          progress(fmt::format("offload agent at {} ({})", n.address, agent_flags));
        }
    }
  }

  nlohmann::json out = {{"graphs", nlohmann::json::array()}, {"results", nlohmann::json::array()}};
  graph::Workers workers(o.threads);
  bool measure_local = std::find(o.systems.begin(), o.systems.end(), "local") != o.systems.end();
  char spill_template[] = "/tmp/pulse-bench-graph-XXXXXX";
  if (mkdtemp(spill_template) == nullptr) return Status::IoError("bench graph: cannot make a temporary directory");
  const std::string spill_dir = spill_template;
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);  // best effort: a leftover temporary directory harms nothing
    }
  } remove_spill{spill_dir};
  for (const auto& file : o.graphs) {
    PULSE_ASSIGN_OR_RETURN(Reference ref, RunInMemory(o, file, apps, measure_local, spill_dir, workers, out));
    GraphSpaceOptions space_options;
    space_options.buffer_bytes = o.buffer_bytes != 0 ? o.buffer_bytes : std::max<uint64_t>(ref.csr_bytes / 4, o.page_bytes);
    space_options.page_bytes = o.page_bytes;
    space_options.switch_address = switch_address;
    for (const auto& system : o.systems) {
      space_options.agent_address =
          system == "proxy" && !o.proxy_agent_address.empty() ? o.proxy_agent_address : o.agent_address;
      if (space_options.agent_address.empty()) space_options.agent_address = started_agent;
      if (system == "offload") {
        RunOffloaded(o, file, apps, ref, switch_address, workers, out);
      } else if (system != "local") {
        RunOnSystem(o, file, system, apps, ref, space_options, workers, out);
      }
    }
  }
  if (needs_cluster) PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return out;
}

}  // namespace pulse::bench
