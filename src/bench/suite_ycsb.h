// `pulse bench suite`'s "ycsb" study (issue 16, seed 004 section 6.4):
// `pulse bench ycsb` for workloads A, B, C, D and F, uniform and Zipfian
// (D: latest), on the tiered system and its baselines (paging, object-rpc,
// all-local) with 2 racks, and the ablation ladder (ycsb_ablation.h) on C
// Zipf 0.99; reduced scale with --quick.  A system that
// cannot run a workload (object-rpc writes, paging inserts; ycsb_bench.h) is
// recorded as "not available" with the bench's reason, not measured as
// something else.  Its targets are ratios of two systems' throughput in one
// run (tiered >= 3x paging on C, Zipf 0.99) and of two swap runs (swap on
// >= 1.2x off, H_p = 1 <= H_p = 3; each a run of its own).  Its plot is ycsb.png
// (scripts/plot_suite.py).  A run that fails is noted in the study (never an
// error of the suite).
// Thread-safety: not meant to run concurrently (each run starts a cluster).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/suite.h"
#include "bench/suite_apps.h"

namespace pulse::bench {

// The study's section of results.json: {"runs": [<bench ycsb --json, with
// "label">...], "not_available": [{"label", "system", "reason"}...],
// "swaps": [<bench ycsb --json of tiered on C zipfian, swap off / on at
// H_p = 3 / on at H_p = 1, with "label">...], "ablation": <bench ycsb
// --ablation --json on C zipfian>,
// "notes": [<failures>...]}.
nlohmann::json RunSuiteYcsbStudy(const SuiteAppStudyOptions& options);

// The study's targets, from its section of results.json (a target whose
// runs are absent has no ratio and says why in its note).
std::vector<TargetCheck> SuiteYcsbTargets(const nlohmann::json& study);

// Its section of report.md.
std::string SuiteYcsbStudyMarkdown(const nlohmann::json& study);

}  // namespace pulse::bench
