#include "bench/suite_cxl.h"

#include <fmt/format.h>

#include "bench/cxl_bench.h"
#include "bench/suite.h"

namespace pulse::bench {

using nlohmann::json;

json RunSuiteCxlStudy(const SuiteAppStudyOptions& s) {
  json study{{"runs", json::array()}, {"notes", json::array()}};
  // The three applications as `pulse bench app` runs them, then webservice
  // with chains of about 100 (CHASE Table 2's UPC).
  for (const uint32_t chain : {0u, 100u}) {
    CxlBenchOptions o;
    if (chain != 0) o.apps = {"webservice"};
    o.chain_length = chain;
    o.ops = s.quick ? 1000 : 4000;
    o.warmup_ops = o.ops / 2;
    o.binary = s.binary;
    o.run_dir = s.run_dir;
    o.progress = s.progress;
    const std::string label = chain == 0 ? "apps" : fmt::format("webservice chain_length={}", chain);
    if (s.progress) s.progress(fmt::format("cxl: bench cxl ({}), {} operations each, a model", label, o.ops));
    Result<CxlBenchResult> r = RunCxlBench(o);
    if (!r.ok()) {
      study["notes"].push_back(label + ": " + r.status().ToString());
      continue;
    }
    json j = r->ToJson(o);
    j["label"] = label;
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
