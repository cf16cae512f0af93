// `pulse bench suite`: planning and running the matrix and the studies
// (src/bench/suite.h).  Targets: suite_targets.cc; report: suite_report.cc.
#include "bench/suite.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "bench/app_systems.h"
#include "bench/suite_apps.h"
#include "bench/suite_cxl.h"
#include "bench/suite_ycsb.h"
#include "bench/suite_graph.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string Duration(double seconds) {
  const auto s = static_cast<uint64_t>(std::max(0.0, seconds));
  return s >= 60 ? fmt::format("{}m{:02}s", s / 60, s % 60) : fmt::format("{}s", s);
}

// Why a run is skipped rather than failed: the system (or the harness)
// rejected the configuration before measuring anything.
bool IsRejection(const Status& s) { return s.code() == Status::Code::kInvalidArgument; }

class Planner {
 public:
  Planner(const SuiteOptions& o, const std::vector<std::string>& systems) : o_(o), systems_(systems) {}

  AppBenchOptions Base(const std::string& app, const std::string& system, uint32_t nodes,
                       const SuiteRegime& regime) const {
    AppBenchOptions a;
    a.app = app;
    a.system = system;
    a.memory_nodes = nodes;
    a.seconds = o_.seconds;
    a.mode = ExecutionMode::kOffload;  // what `bench app` runs by default
    a.ucx_tls = regime.ucx_tls;
    a.binary = o_.binary;
    a.run_dir = o_.run_dir;
    auto it = o_.sizes.find(app);
    if (it != o_.sizes.end()) a.size = it->second;
    if (o_.quick) a.warmup_ops = 50;
    a.fabric = o_.fabric;
    a.routing = "direct";  // the switch_routing study sets the other
    return a;
  }

  void Add(std::vector<SuiteRun>* plan, const std::string& study, const SuiteRegime& regime,
           const std::string& variant, AppBenchOptions a) const {
    SuiteRun r;
    r.study = study;
    r.regime = regime.name;
    r.variant = variant;
    r.options = std::move(a);
    plan->push_back(std::move(r));
  }

  bool Wants(const std::string& study) const {
    if (o_.studies.size() == 1 && o_.studies[0] == "none") return false;
    return o_.studies.empty() || Contains(o_.studies, study);
  }
  bool HasApp(const std::string& app) const { return Contains(o_.apps, app); }

  void Studies(std::vector<SuiteRun>* plan, const SuiteRegime& regime) const {
    const bool q = o_.quick;
    if (Wants("traversal_length") && HasApp("webservice")) {
      for (uint32_t chain : q ? std::vector<uint32_t>{1, 100} : std::vector<uint32_t>{1, 10, 30, 100}) {
        AppBenchOptions a = Base("webservice", "pulse", 1, regime);
        a.chain_length = chain;
        Add(plan, "traversal_length", regime, fmt::format("chain_length={}", chain), a);
      }
    }
    if (Wants("traversal_length") && HasApp("wiredtiger")) {
      for (uint32_t scan : q ? std::vector<uint32_t>{10, 100} : std::vector<uint32_t>{10, 25, 50, 100}) {
        AppBenchOptions a = Base("wiredtiger", "pulse", 1, regime);
        a.scan_length = scan;
        Add(plan, "traversal_length", regime, fmt::format("scan_length={}", scan), a);
      }
    }
    if (Wants("allocation") && HasApp("wiredtiger")) {
      for (const char* policy : {"uniform", "partitioned"}) {
        AppBenchOptions a = Base("wiredtiger", "pulse", 2, regime);
        a.allocation = policy;
        Add(plan, "allocation", regime, fmt::format("allocation={}", policy), a);
      }
    }
    if (Wants("distribution") && HasApp("webservice")) {
      // pulse keeps no CPU-node cache, so the skew matters through a cache:
      // the cache system runs too when it is registered and selected.
      for (const std::string& system : {std::string("pulse"), std::string("cache")}) {
        if (system != "pulse" && !Contains(systems_, system)) continue;
        for (const char* dist : {"zipfian", "uniform"}) {
          AppBenchOptions a = Base("webservice", system, 1, regime);
          a.distribution = dist;
          Add(plan, "distribution", regime, fmt::format("distribution={}", dist), a);
        }
      }
    }
    // Memory-node CPU per request at saturating load (the target is
    // stated there): several closed-loop clients against 2 memory nodes.
    if (Wants("saturation")) {
      for (const std::string& app : o_.apps) {
        for (const char* system : {"pulse", "rpc"}) {
          if (!Contains(systems_, system)) continue;
          AppBenchOptions a = Base(app, system, 2, regime);
          a.concurrency = o_.saturation_clients;
          Add(plan, "saturation", regime, fmt::format("clients={}", a.concurrency), a);
        }
      }
    }
    if (Wants("writes") && HasApp("webservice")) {
      for (double f : q ? std::vector<double>{0, 0.5} : std::vector<double>{0, 0.1, 0.25, 0.5}) {
        for (bool offload : {true, false}) {
          if (f == 0 && !offload) continue;  // no inserts: nothing to allocate
          AppBenchOptions a = Base("webservice", "pulse", 1, regime);
          a.insert_fraction = f;
          a.offload_alloc = offload;
          Add(plan, "writes", regime, fmt::format("insert_fraction={} offload_alloc={}", f, offload), a);
        }
      }
    }
  }

  // The matrix's pulse, pulse-acc and rpc cells at 1 and 2 memory nodes once
  // more under switch routing (the paper's topology: every traversal message
  // and RPC crosses the switch process), beside the matrix's direct routing.
  void SwitchRouting(std::vector<SuiteRun>* plan, const SuiteRegime& regime) const {
    for (const std::string& app : o_.apps)
      for (uint32_t nodes : o_.nodes) {
        if (nodes > 2) continue;  // reduced scale: the slower mode
        for (const char* system : {"pulse", "pulse-acc", "rpc"}) {
          if (!Contains(systems_, system)) continue;
          AppBenchOptions a = Base(app, system, nodes, regime);
          a.routing = "switch";
          a.rpc_path = "switch";
          Add(plan, "switch_routing", regime, "routing=switch", a);
        }
      }
  }

  // pulse vs pulse-acc at 2 and 4 nodes (000 Fig. 9): from the matrix where
  // it has both; the missing runs otherwise.
  void PulseVsAcc(std::vector<SuiteRun>* plan, const SuiteRegime& regime) const {
    for (uint32_t nodes : {2u, 4u}) {
      for (const std::string& app : o_.apps) {
        for (const char* system : {"pulse", "pulse-acc"}) {
          const bool in_matrix = Contains(systems_, system) &&
                                 std::find(o_.nodes.begin(), o_.nodes.end(), nodes) != o_.nodes.end();
          if (!in_matrix) Add(plan, "pulse_vs_acc", regime, "", Base(app, system, nodes, regime));
        }
      }
    }
  }

 private:
  const SuiteOptions& o_;
  const std::vector<std::string>& systems_;
};

}  // namespace

Result<SuiteRegime> SuiteRegimeNamed(const std::string& name) {
  // "tcp" alone also carries the connection set-up; "shm" is every
  // shared-memory transport (posix, sysv, cma) with tcp left for the
  // connection manager's socket, which UCX needs to wire endpoints up.
  if (name == "tcp") return SuiteRegime{"tcp", "tcp"};
  if (name == "shm") return SuiteRegime{"shm", "shm,tcp"};
  return Status::InvalidArgument(fmt::format("bench suite: unknown regime '{}' (tcp, shm)", name));
}

const std::vector<std::string>& SuiteStudyNames() {
  static const std::vector<std::string> names = {"traversal_length", "allocation", "distribution", "writes",
                                                 "saturation", "pipelines", "pulse_vs_acc", "graph",
                                                 "switch_routing", "kv", "dlrm", "tx", "cxl", "ycsb"};
  return names;
}

SuiteOptions QuickSuiteOptions(SuiteOptions o) {
  o.quick = true;
  o.seconds = 1;
  o.nodes = {1, 2};
  for (const auto& [app, size] : std::map<std::string, uint64_t>{{"webservice", 2000}, {"wiredtiger", 5000},
                                                                  {"btrdb", 180}})
    o.sizes.emplace(app, size);  // keeps sizes the caller set
  return o;
}

const char* SuiteOutcomeName(SuiteRun::Outcome o) {
  switch (o) {
    case SuiteRun::Outcome::kPending: return "pending";
    case SuiteRun::Outcome::kOk: return "ok";
    case SuiteRun::Outcome::kSkipped: return "skipped";
    case SuiteRun::Outcome::kFailed: return "failed";
  }
  return "?";
}

double Throughput(const AppBenchResult& r) {
  return r.closed.seconds > 0 ? static_cast<double>(r.closed.ops) / r.closed.seconds : 0;
}

std::string SuitePlotPython() {
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    const std::string probe = fmt::format("{} -c 'import matplotlib' >/dev/null 2>&1", python);
    if (std::system(probe.c_str()) == 0) return python;
  }
  return "";
}

Result<std::vector<SuiteRun>> PlanSuite(const SuiteOptions& o) {
  if (o.apps.empty() || o.nodes.empty() || o.regimes.empty())
    return Status::InvalidArgument("bench suite: --apps, --nodes and --regimes must not be empty");
  if (o.seconds <= 0) return Status::InvalidArgument("bench suite: --seconds must be > 0");
  for (const std::string& app : o.apps)
    if (app != "webservice" && app != "wiredtiger" && app != "btrdb")
      return Status::InvalidArgument(fmt::format("bench suite: unknown app '{}' (webservice, wiredtiger, btrdb)", app));
  for (const auto& [app, size] : o.sizes)
    if (app != "webservice" && app != "wiredtiger" && app != "btrdb")
      return Status::InvalidArgument(fmt::format("bench suite: --size for unknown app '{}'", app));
  for (uint32_t n : o.nodes)
    if (n < 1 || n > 64) return Status::InvalidArgument(fmt::format("bench suite: --nodes {} is not in 1..64", n));
  std::vector<std::string> registered;
  for (const AppSystemEntry& e : AppSystems()) registered.push_back(e.name);
  const std::vector<std::string> systems = o.systems.empty() ? registered : o.systems;
  for (const std::string& s : systems)
    if (!Contains(registered, s))
      return Status::InvalidArgument(fmt::format("bench suite: unknown system '{}' (known: {})", s,
                                                 fmt::join(registered, ", ")));
  for (const std::string& s : o.studies)
    if (!Contains(SuiteStudyNames(), s) && !(s == "none" && o.studies.size() == 1))
      return Status::InvalidArgument(fmt::format("bench suite: unknown study '{}' (known: {}, or none)", s,
                                                 fmt::join(SuiteStudyNames(), ", ")));
  std::vector<SuiteRegime> regimes;
  for (const std::string& name : o.regimes) {
    auto r = SuiteRegimeNamed(name);
    if (!r.ok()) return r.status();
    regimes.push_back(*r);
  }

  Planner p(o, systems);
  std::vector<SuiteRun> plan;
  for (const SuiteRegime& regime : regimes)
    for (const std::string& app : o.apps)
      for (uint32_t nodes : o.nodes)
        for (const std::string& system : systems) p.Add(&plan, "matrix", regime, "", p.Base(app, system, nodes, regime));
  // The studies vary one knob of pulse in the first (default: network) regime.
  p.Studies(&plan, regimes.front());
  if (p.Wants("switch_routing")) p.SwitchRouting(&plan, regimes.front());
  if (p.Wants("pulse_vs_acc") && Contains(registered, "pulse-acc")) p.PulseVsAcc(&plan, regimes.front());
  return plan;
}

Result<SuiteResult> RunSuite(const SuiteOptions& o) {
  auto plan = PlanSuite(o);
  if (!plan.ok()) return plan.status();
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return Status::IoError(fmt::format("bench suite: cannot create --out {}: {}", o.out_dir, ec.message()));
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  SuiteResult res;
  res.runs = std::move(*plan);
  const auto start = Clock::now();
  // ETA: the mean wall time of the runs so far times the runs left.
  double done_wall = 0;
  const size_t total = res.runs.size();
  for (size_t i = 0; i < total; ++i) {
    SuiteRun& run = res.runs[i];
    const std::string what = fmt::format("{} {} {} {} node(s){}", run.regime, run.options.app, run.options.system,
                                         run.options.memory_nodes, run.variant.empty() ? "" : " " + run.variant);
    const auto t0 = Clock::now();
    auto r = RunAppBench(run.options);
    // One more attempt after a failure (not a rejection): on a machine that
    // others share, a node can fail to start (e.g. its port was taken between
    // choosing and binding it).  The first error stays in the record.
    std::string first_failure;
    if (!r.ok() && !IsRejection(r.status())) {
      first_failure = r.status().ToString();
      say(fmt::format("[{}/{}] {}: failed ({}); once more", i + 1, total, what, first_failure));
      r = RunAppBench(run.options);
    }
    run.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    done_wall += run.wall_seconds;
    std::string outcome;
    if (r.ok()) {
      run.outcome = SuiteRun::Outcome::kOk;
      run.result = std::move(*r);
      outcome = fmt::format("{:.0f} ops/s, {:.1f} us mean", Throughput(run.result), run.result.closed.latency.mean_us);
    } else {
      run.outcome = IsRejection(r.status()) ? SuiteRun::Outcome::kSkipped : SuiteRun::Outcome::kFailed;
      run.reason = r.status().ToString();
      outcome = fmt::format("{}: {}", SuiteOutcomeName(run.outcome), run.reason);
    }
    if (!first_failure.empty()) run.reason = fmt::format("{}{}first attempt failed: {}", run.reason,
                                                         run.reason.empty() ? "" : "; ", first_failure);
    const double eta = done_wall / static_cast<double>(i + 1) * static_cast<double>(total - i - 1);
    say(fmt::format("[{}/{}] {} {}: {} ({} elapsed, ETA {})", i + 1, total, run.study, what, outcome,
                    Duration(std::chrono::duration<double>(Clock::now() - start).count()), Duration(eta)));
  }

  if (std::find(o.studies.begin(), o.studies.end(), "none") == o.studies.end() &&
      (o.studies.empty() || Contains(o.studies, "pipelines"))) {
    // The memory node runs one pipeline on its network thread (pulse/engine.h),
    // so the pipelines study is the engine alone with P pipeline threads.
    EngineBenchOptions e;
    e.size_gib = o.quick ? 0.0625 : 0.25;
    e.seconds = o.quick ? 0.3 : 1.0;
    e.rounds = 1;
    e.pipelines = 2;
    say("pipelines: bench engine with 1 and 2 memory pipelines");
    auto er = RunEngineBench(e);
    if (er.ok()) {
      res.pipelines = *er;
    } else {
      res.pipelines_note = er.status().ToString();
    }
  }

  if (std::find(o.studies.begin(), o.studies.end(), "none") == o.studies.end() &&
      (o.studies.empty() || Contains(o.studies, "graph"))) {
    SuiteGraphOptions g;
    g.scale = o.graph_scale;
    g.dir = (std::filesystem::path(o.out_dir) / "graphs").string();
    g.binary = o.binary;
    g.run_dir = o.run_dir;
    g.progress = say;
    say(fmt::format("graph: the five applications on rmat-{} on every system", o.graph_scale));
    res.graph = std::make_shared<SuiteGraphStudy>(RunSuiteGraphStudy(g));
  }

  // Issue 15's applications (suite_apps.h), each a bench of its own.
  const SuiteAppStudyOptions apps{o.quick, o.binary, o.run_dir, say};
  const bool no_studies = std::find(o.studies.begin(), o.studies.end(), "none") != o.studies.end();
  for (const auto& [name, run] : {std::pair{"kv", &RunSuiteKvStudy}, std::pair{"dlrm", &RunSuiteDlrmStudy},
                                  std::pair{"tx", &RunSuiteTxStudy}, std::pair{"cxl", &RunSuiteCxlStudy},
                                  std::pair{"ycsb", &RunSuiteYcsbStudy}}) {
    if (no_studies || !(o.studies.empty() || Contains(o.studies, name))) continue;
    res.app_studies[name] = run(apps);
  }

  res.targets = ComputeTargets(res.runs);
  if (auto ycsb = res.app_studies.find("ycsb"); ycsb != res.app_studies.end())
    for (TargetCheck& t : SuiteYcsbTargets(ycsb->second)) res.targets.push_back(std::move(t));
  res.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const std::filesystem::path dir(o.out_dir);
  {
    std::ofstream f(dir / "results.json");
    f << SuiteResultJson(o, res).dump(2) << "\n";
    if (!f) return Status::IoError(fmt::format("bench suite: cannot write {}", (dir / "results.json").string()));
  }
  const std::string python = o.plot_script.empty() ? "" : SuitePlotPython();
  if (o.plot_script.empty()) {
    res.plots_note = "no plots: no plot script given";
  } else if (python.empty()) {
    res.plots_note = "no plots: python3 with matplotlib is not installed (scripts/setup.sh installs python3-matplotlib)";
  } else {
    const std::string cmd = fmt::format("{} '{}' '{}' >'{}' 2>&1", python, o.plot_script, dir.string(),
                                        (dir / "plots.log").string());
    const int rc = std::system(cmd.c_str());
    res.plots_note = rc == 0 ? "plots: *.png in this directory (scripts/plot_suite.py)"
                             : fmt::format("plot script failed (exit {}); see plots.log", rc);
  }
  {
    std::ofstream f(dir / "report.md");
    f << SuiteReport(o, res);
    if (!f) return Status::IoError(fmt::format("bench suite: cannot write {}", (dir / "report.md").string()));
  }
  return res;
}

}  // namespace pulse::bench
