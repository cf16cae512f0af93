// `pulse bench suite`'s "cxl" study: pulse's own CXL study (seed 000 section
// 7, Fig. 12; issue 16), a model (cxl_bench.h, docs/cxl.md): the three
// applications priced on local DRAM, CXL memory and CXL memory with pulse,
// on one node and on four behind a CXL switch, with the default cache and
// with a cache of 1% of the footprint, plus webservice's high-load-factor
// variant (chains of about 100).  Its plot is cxl.png
// (scripts/plot_suite.py).  A run that fails is noted in the study (never
// an error of the suite).
// Thread-safety: not meant to run concurrently (each capture starts a cluster).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bench/suite_apps.h"

namespace pulse::bench {

// The study's section of results.json: {"runs": [<bench cxl --json, with
// "label">...], "notes": [<failures>...]}.
nlohmann::json RunSuiteCxlStudy(const SuiteAppStudyOptions& options);

// Its section of report.md.
std::string SuiteCxlStudyMarkdown(const nlohmann::json& study);

}  // namespace pulse::bench
