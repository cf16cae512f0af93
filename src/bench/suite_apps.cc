// The suite's studies of issue 15's applications (suite_apps.h).
#include "bench/suite_apps.h"

#include <map>
#include <vector>

#include <fmt/format.h>

#include "bench/dlrm_bench.h"
#include "bench/kv_bench.h"
#include "bench/suite.h"
#include "bench/tx_bench.h"

namespace pulse::bench {
namespace {

using nlohmann::json;

json EmptyStudy() { return json{{"runs", json::array()}, {"notes", json::array()}}; }

std::string Cell(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return v.is_number() ? SuiteNumber(v.get<double>()) : std::string("-");
}
// The run's `key`, or "-" when the run has none (a const json's operator[]
// must not be asked for a missing key).
std::string Cell(const json& run, const char* key) { return run.contains(key) ? Cell(run.at(key)) : std::string("-"); }

}  // namespace

json RunSuiteKvStudy(const SuiteAppStudyOptions& s) {
  json study = EmptyStudy();
  for (const char* mix : {"get", "50"}) {
    KvBenchOptions o;
    o.system = "all";  // with PUTs in the mix the rpc systems are left out (GET-only handlers)
    o.mix = mix;
    o.items = s.quick ? 10000 : 100000;
    o.seconds = s.quick ? 0.5 : 2;
    if (s.quick) o.concurrency = 32;  // no sweep: one level
    o.binary = s.binary;
    o.run_dir = s.run_dir;
    o.progress = s.progress;
    const std::string label = std::string(mix) == "get" ? "100% GET" : "50% GET / 50% PUT";
    if (s.progress) s.progress(fmt::format("kv: bench kv --system all, {}, uniform, {} items", label, o.items));
    Result<KvBenchResult> r = RunKvBench(o);
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

json RunSuiteDlrmStudy(const SuiteAppStudyOptions& s) {
  json study = EmptyStudy();
  for (const char* dist : {"zipf", "uniform"}) {
    DlrmBenchOptions o;
    o.distribution = dist;
    if (s.quick) {
      o.tables = 4;
      o.rows = 10000;
      o.seconds = 1;
    }
    o.binary = s.binary;
    o.run_dir = s.run_dir;
    o.progress = s.progress;
    if (s.progress) s.progress(fmt::format("dlrm: bench dlrm, {} tables of {} rows, {}", o.tables, o.rows, dist));
    Result<DlrmBenchResult> r = RunDlrmBench(o);
    if (!r.ok()) {
      study["notes"].push_back(std::string(dist) + ": " + r.status().ToString());
      continue;
    }
    json j = DlrmBenchJson(o, *r);
    j["label"] = dist;
    study["runs"].push_back(std::move(j));
  }
  return study;
}

json RunSuiteTxStudy(const SuiteAppStudyOptions& s) {
  json study = EmptyStudy();
  TxBenchOptions o;  // both systems, shapes (0,1) and (4,2), 64 B and 1024 B values
  if (s.quick) {
    o.value_bytes = {64};
    o.seconds = 0.5;
  }
  o.binary = s.binary;
  o.run_dir = s.run_dir;
  o.progress = s.progress;
  if (s.progress) s.progress(fmt::format("tx: bench tx --system all, shapes {}", o.shapes));
  Result<TxBenchResult> r = RunTxBench(o);
  if (!r.ok()) {
    study["notes"].push_back("bench tx: " + r.status().ToString());
    return study;
  }
  // One study run per (shape, value size), the systems side by side in it,
  // as the kv and dlrm studies lay out theirs.
  const json all = r->ToJson(o);
  std::map<std::string, json> by_label;
  std::vector<std::string> order;
  for (const json& run : all["runs"]) {
    const std::string label = fmt::format("({},{}) {} B", run.value("reads", 0u), run.value("writes", 0u),
                                          run.value("value_bytes", 0u));
    if (by_label.count(label) == 0) {
      order.push_back(label);
      by_label[label] = json{{"label", label}, {"systems", json::object()}};
    }
    by_label[label]["systems"][run.value("system", "")] = run;
  }
  for (const std::string& label : order) study["runs"].push_back(std::move(by_label[label]));
  if (all.contains("targets")) study["targets"] = all["targets"];
  return study;
}

std::string SuiteAppStudyMarkdown(const std::string& name, const json& study) {
  std::string md = fmt::format("\n## The {} study (issue 15)\n\n", name);
  if (name == "kv") {
    md += "`pulse bench kv --system all` (plot: kv.png).  mn CPU: memory-node CPU per request.\n\n";
    md += "| mix | path | requests/s | p50 us | p99 us | mn CPU us | accesses/GET |\n|---|---|---|---|---|---|---|\n";
    for (const json& run : study.value("runs", json::array())) {
      const json each = run.value("paths", json::object());
      for (const auto& [path, p] : each.items())
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", run.value("label", ""), path,
                          Cell(p, "throughput_ops"), Cell(p, "p50_us"), Cell(p, "p99_us"), Cell(p, "mn_cpu_us_per_op"),
                          Cell(p, "accesses_per_get"));
    }
  } else if (name == "dlrm") {
    md += "`pulse bench dlrm`, synthetic indices (plot: dlrm.png).\n\n";
    md += "| indices | system | queries/s | p50 us | p99 us | mn CPU us | verified | mismatches |\n"
          "|---|---|---|---|---|---|---|---|\n";
    for (const json& run : study.value("runs", json::array())) {
      const json each = run.value("systems", json::object());
      for (const auto& [system, p] : each.items())
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", run.value("label", ""), system,
                          Cell(p, "throughput_qps"), Cell(p, "lat_p50_us"), Cell(p, "lat_p99_us"),
                          Cell(p, "mn_cpu_us_per_query"), Cell(p, "verified"), Cell(p, "mismatches"));
    }
  } else if (name == "tx") {
    md += "`pulse bench tx --system all`: one transaction at a time (plot: tx.png).\n\n";
    md += "| shape, value | system | tx/s | mean us | p99 us | mn CPU us | messages | one-sided |\n"
          "|---|---|---|---|---|---|---|---|\n";
    for (const json& run : study.value("runs", json::array())) {
      const json each = run.value("systems", json::object());
      for (const auto& [system, p] : each.items())
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", run.value("label", ""), system,
                          Cell(p, "throughput_tx"), Cell(p, "mean_us"), Cell(p, "p99_us"), Cell(p, "mn_cpu_us_per_tx"),
                          Cell(p, "messages_per_tx"), Cell(p, "one_sided_per_tx"));
    }
  }
  for (const json& note : study.value("notes", json::array())) md += "- " + note.get<std::string>() + "\n";
  return md;
}

}  // namespace pulse::bench
