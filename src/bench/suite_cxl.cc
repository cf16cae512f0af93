#include "bench/suite_cxl.h"

#include <fmt/format.h>

#include "bench/cxl_bench.h"
#include "bench/suite.h"

namespace pulse::bench {

using nlohmann::json;

json RunSuiteCxlStudy(const SuiteAppStudyOptions& s) {
  json study{{"runs", json::array()}, {"notes", json::array()}};
  // The three applications with the default cache (10% of the footprint),
  // again with a cache of 1% (a working set far beyond the cache, the
  // paper's setting), and webservice with chains of about 100 (CHASE
  // Table 2's UPC).
  struct Variant {
    std::string label;
    double cache_fraction;
    uint32_t chain_length;
  };
  for (const Variant& v : {Variant{"apps", 0.10, 0}, Variant{"apps cache=1%", 0.01, 0},
                           Variant{"webservice chain=100", 0.10, 100}}) {
    CxlBenchOptions o;
    if (v.chain_length != 0) o.apps = {"webservice"};
    o.chain_length = v.chain_length;
    o.cache_fraction = v.cache_fraction;
    o.ops = s.quick ? 1000 : 4000;
    o.warmup_ops = o.ops / 2;
    o.binary = s.binary;
    o.run_dir = s.run_dir;
    o.progress = s.progress;
    if (s.progress) s.progress(fmt::format("cxl: bench cxl ({}), {} operations each, a model", v.label, o.ops));
    Result<CxlBenchResult> r = RunCxlBench(o);
    if (!r.ok()) {
      study["notes"].push_back(v.label + ": " + r.status().ToString());
      continue;
    }
    json j = r->ToJson(o);
    j["label"] = v.label;
    study["runs"].push_back(std::move(j));
  }
  return study;
}

std::string SuiteCxlStudyMarkdown(const json& study) {
  std::string md =
      "\n## The cxl study (issue 16): a model, not a measurement\n\n"
      "`pulse bench cxl` (docs/cxl.md; plot: cxl.png): each application's far accesses, captured on a local "
      "cluster, priced with the stated latencies. Time per operation in ns and the slowdown versus local DRAM; "
      "\"native\" prices pulse's requests without the FPGA's network stack.\n\n"
      "| run | app | nodes | local ns | cxl ns | cxl+pulse ns | cxl slowdown | cxl+pulse slowdown | native slowdown | "
      "continuations/op |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const json& run : study.value("runs", json::array()))
    for (const json& row : run.value("rows", json::array()))
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {}x | {}x | {}x | {} |\n", run.value("label", ""),
                        row.value("app", ""), row.value("nodes", 0), SuiteNumber(row.value("local_ns_per_op", 0.0)),
                        SuiteNumber(row.value("cxl_ns_per_op", 0.0)), SuiteNumber(row.value("cxl_pulse_ns_per_op", 0.0)),
                        SuiteNumber(row.value("cxl_slowdown", 0.0)), SuiteNumber(row.value("cxl_pulse_slowdown", 0.0)),
                        SuiteNumber(row.value("cxl_pulse_native_slowdown", 0.0)),
                        SuiteNumber(row.value("continuations_per_op", 0.0)));
  for (const json& note : study.value("notes", json::array())) md += fmt::format("\n- failed: {}", note.get<std::string>());
  return md + "\n";
}

}  // namespace pulse::bench
