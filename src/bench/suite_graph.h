// `pulse bench suite`'s graph study (issue 17, seed 003 section V): the five
// graph applications on an R-MAT graph (scripts/graphs.sh's parameters:
// edge factor 16, seed 1, symmetric) on every system of `pulse bench graph`,
// side by side, each far system on a cluster of its own with the offload
// agent it needs:
//   local, ssd, memserver, proxy   agent --mode proxy (forwarding only)
//   proxy+async                    agent without its caches: aggregation and
//                                  asynchronous forwarding only
//   agent                          agent with every optimisation
//   agent-no-static                (PageRank only) the static cache off
// and issue 17's targets as ratios of those runs.  Reduced scale by default
// (2^16 vertices, also with --quick: at 2^14 the host's buffer is 6 pages
// and the runs measure thrashing more than the systems), the measurement's
// scale (18) behind `--graph-scale`.
// Thread-safety: not meant to run concurrently (each run starts a cluster).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/suite.h"

namespace pulse::bench {

struct SuiteGraphOptions {
  uint32_t scale = 16;   // R-MAT 2^scale vertices
  std::string dir;       // where the graph file is written (kept: rmat-<scale>.bin)
  std::string binary, run_dir;
  // Offload agent budgets: a quarter of the graph's CSR each (the host's
  // buffer is a quarter too), at least 1 MiB.
  std::function<void(const std::string&)> progress;
};

struct SuiteGraphStudy {
  nlohmann::json graph;                       // as `pulse bench graph` reports it
  nlohmann::json results = nlohmann::json::array();  // every result, system labelled as above
  std::vector<TargetCheck> targets;
  std::vector<std::string> notes;             // runs that failed, and why
};

// Generates the graph (unless the file exists) and runs the study.  A run
// that fails is noted and its results are missing (its targets then not
// measured); never an error.
SuiteGraphStudy RunSuiteGraphStudy(const SuiteGraphOptions& options);

// Issue 17's targets from a study's results (regime "graph", nodes 1):
//   verified            every result verified (ratio: verified / results)
//   proxy vs memserver  proxy+async seconds / memserver seconds <= 1.1, per app
//   agent vs ssd        apps where agent is faster than ssd >= 4
//   static cache        1 - agent / agent-no-static memory-node bytes
//                       (PageRank) >= 0.2
//   dynamic hit rate    agent's, PageRank and CC >= 0.9
// A target whose runs are missing is listed with its ratio unset.
std::vector<TargetCheck> GraphTargets(const nlohmann::json& results);

// The study's section of report.md: the run-time table, traffic by class,
// hit rates and CPU, then the targets.
std::string GraphStudyMarkdown(const SuiteGraphStudy& study);

}  // namespace pulse::bench
