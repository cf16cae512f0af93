// `pulse bench suite`: the evaluation of seed 000 section 6 / appendix C and
// seed 001 section 7 in one command.  The matrix (applications x systems x
// memory nodes, in each transport regime), the sensitivity studies of
// appendix C and pulse vs pulse-acc (000 Fig. 9), each run a RunAppBench on
// a fresh local cluster; then results.json, report.md and PNG plots in one
// directory.
//
// Thread-safety: the functions are not meant to run concurrently (each run
// starts a cluster and the regimes set UCX_TLS for this process).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/app_bench.h"
#include "bench/engine_bench.h"
#include "pulse/status.h"

namespace pulse::bench {

// A transport regime: "tcp" (UCX's TCP transport: the network-attached
// regime of the papers, microseconds per hop even on one host) or "shm"
// (UCX's shared-memory transports: the CXL-like regime of 000 section 7).
struct SuiteRegime {
  std::string name;
  std::string ucx_tls;
};
// InvalidArgument for a name other than tcp or shm.
Result<SuiteRegime> SuiteRegimeNamed(const std::string& name);

// The sensitivity studies of seed 000 appendix C, by name.
const std::vector<std::string>& SuiteStudyNames();

struct SuiteOptions {
  std::string out_dir;  // results.json, report.md, *.png (created if absent)
  std::vector<std::string> apps = {"webservice", "wiredtiger", "btrdb"};
  std::vector<std::string> systems;  // empty: every registered system (AppSystems())
  std::vector<uint32_t> nodes = {1, 2, 4};
  std::vector<std::string> regimes = {"tcp", "shm"};
  std::vector<std::string> studies;  // empty: all of SuiteStudyNames(); "none" alone: no studies
  double seconds = 3;                // measured closed-loop phase of each run
  std::map<std::string, uint64_t> sizes;  // per app (bench app --size units); absent: the app's default
  bool quick = false;                // shorter study sweeps and a smaller pipeline run
  uint32_t saturation_clients = 4;   // the saturation study's closed-loop clients (bench app --concurrency)
  std::string binary, run_dir;       // as AppBenchOptions
  std::string plot_script;           // scripts/plot_suite.py; empty: no plots
  uint32_t graph_scale = 16;         // the graph study's R-MAT scale (suite_graph.h)
  FabricModel fabric;                // the rack projection's parameters (app_projection.h)
  std::function<void(const std::string&)> progress;  // one line per run, with the ETA
};

// The `--quick` preset on top of `base`: 1 s phases, small data sets,
// 1 and 2 memory nodes, short study sweeps (a few minutes on a 2-core VM).
SuiteOptions QuickSuiteOptions(SuiteOptions base);

// One run of the suite.
struct SuiteRun {
  enum class Outcome { kPending, kOk, kSkipped, kFailed };
  // "matrix", "pulse_vs_acc", "switch_routing" (pulse, pulse-acc and rpc at
  // 1 and 2 memory nodes with every traversal message and RPC through the
  // switch, the paper's topology; the matrix runs direct routing) or a study
  // name.
  std::string study = "matrix";
  std::string regime;
  std::string variant;           // the study's setting, e.g. "chain_length=100"; empty in the matrix
  AppBenchOptions options;
  Outcome outcome = Outcome::kPending;
  std::string reason;            // why it was skipped or failed (or why it was run twice)
  AppBenchResult result;         // when kOk
  double wall_seconds = 0;       // cluster start, load, phases and stop
};
const char* SuiteOutcomeName(SuiteRun::Outcome o);
double Throughput(const AppBenchResult& r);  // closed-loop requests per second

// A target of issue 6, computed from two runs of the same suite.
struct TargetCheck {
  std::string name;     // e.g. "latency vs cache"
  std::string regime, app;
  uint32_t nodes = 0;
  std::string ratio_of;  // what the ratio divides, e.g. "cache lat / pulse lat"
  std::optional<double> ratio;  // unset: not measured (see note)
  double goal = 0;
  bool at_least = true;  // the ratio must be >= goal (else <= goal)
  bool met = false;
  double shortfall = 1;  // missed by this factor (>= 1; 1 when met)
  std::string note;      // the saturated resource, or why it was not measured
};

// Every target of issue 6 for every regime, app and node count the matrix
// runs cover (targets whose counterpart system did not run are listed, with
// ratio unset and the reason in note).
std::vector<TargetCheck> ComputeTargets(const std::vector<SuiteRun>& runs);
// Which resource bounds the run's requests, from its own figures (memory-node
// CPU per operation, wire bytes per operation, cross-node hops), in words.
std::string SaturatedResource(const AppBenchResult& r);

struct SuiteGraphStudy;  // suite_graph.h

struct SuiteResult {
  std::vector<SuiteRun> runs;
  std::shared_ptr<SuiteGraphStudy> graph;      // the graph study (issue 17), when it ran
  std::optional<EngineBenchResult> pipelines;  // the memory-pipelines study
  std::string pipelines_note;                  // why it is absent, or how to read it
  // Issue 15's application studies by name (kv, dlrm, tx; suite_apps.h) and
  // issue 16's CXL model (cxl; suite_cxl.h) and YCSB study (ycsb; suite_ycsb.h),
  // each as results.json carries it.
  std::map<std::string, nlohmann::json> app_studies;
  std::vector<TargetCheck> targets;
  std::string plots_note;  // the plot script's outcome
  double wall_seconds = 0;
};

// A Python interpreter that can import matplotlib: python3 on PATH, else
// Debian's /usr/bin/python3 (which scripts/setup.sh equips), else "".
std::string SuitePlotPython();

// The runs `options` asks for, in order, all kPending.  InvalidArgument for
// an unknown app, system, regime or study, no apps/systems/nodes/regimes, or
// seconds <= 0.
Result<std::vector<SuiteRun>> PlanSuite(const SuiteOptions& options);

// Runs the plan (a run that fails is recorded and the suite goes on; a
// system that rejects a configuration with InvalidArgument is recorded as
// skipped), then writes results.json, report.md and (with a plot script,
// python3 and matplotlib) the plots into options.out_dir.  Errors: those of
// PlanSuite, and IoError if out_dir cannot be written.
Result<SuiteResult> RunSuite(const SuiteOptions& options);

// results.json of a result (what RunSuite writes).
nlohmann::json SuiteResultJson(const SuiteOptions& options, const SuiteResult& result);
// A figure as the report prints it (3 significant digits or whole numbers).
std::string SuiteNumber(double v);
// report.md of a result.
std::string SuiteReport(const SuiteOptions& options, const SuiteResult& result);
// The matrix and the targets, compactly (what `make demo` prints).
std::string SuiteComparisonTable(const SuiteResult& result);

}  // namespace pulse::bench
