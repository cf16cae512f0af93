// The suite's ycsb study (suite_ycsb.h).
#include "bench/suite_ycsb.h"

#include <fmt/format.h>

#include "bench/ycsb_ablation.h"
#include "bench/ycsb_bench.h"

namespace pulse::bench {

using nlohmann::json;

namespace {

const std::vector<std::string> kSystems = {"tiered", "paging", "object-rpc", "all-local"};

// One bench ycsb run of the study: a workload and its key distribution.
struct Cell {
  char workload;
  std::string distribution;  // D runs "latest" whatever it is given
  std::string Label() const { return fmt::format("{} {}", workload, workload == 'D' ? "latest" : distribution); }
};

std::vector<Cell> Cells() {
  std::vector<Cell> cells;
  for (char w : {'A', 'B', 'C', 'D', 'F'}) {
    if (w == 'D') {
      cells.push_back({w, "zipfian"});
      continue;
    }
    for (const char* d : {"zipfian", "uniform"}) cells.push_back({w, d});
  }
  return cells;
}

YcsbBenchOptions CellOptions(const SuiteAppStudyOptions& s, const Cell& c) {
  YcsbBenchOptions o;
  o.workload.workload = c.workload;
  o.workload.distribution = c.distribution;
  o.racks = 2;
  if (s.quick) {
    o.workload.records = 2000;
    o.ops = 2000;
    o.warmup = 100;
    o.clients = 1;
    o.pool_mib = 64;
  } else {
    o.workload.records = 100000;
    o.ops = 40000;
    o.warmup = 1000;
    o.clients = 2;
  }
  o.binary = s.binary;
  o.run_dir = s.run_dir;
  o.progress = s.progress;
  return o;
}

// The element of array `key` of `parent` whose `field` is `value`, or null
// (a pointer into `parent`: value() would return a copy).
const json* FindIn(const json& parent, const char* key, const char* field, const std::string& value) {
  const auto array = parent.find(key);
  if (array == parent.end() || !array->is_array()) return nullptr;
  for (const json& e : *array)
    if (e.is_object() && e.value(field, "") == value) return &e;
  return nullptr;
}

TargetCheck Pending(std::string name, std::string ratio_of, double goal, bool at_least, std::string note) {
  TargetCheck t;
  t.name = std::move(name);
  t.regime = "tcp";
  t.app = "ycsb C zipfian";
  t.nodes = 2;
  t.ratio_of = std::move(ratio_of);
  t.goal = goal;
  t.at_least = at_least;
  t.note = std::move(note);
  return t;
}

// The swap runs (seed 004 Fig. 20): the tiered system on C zipfian with
// swaps off, on at H_p = 3 and on at H_p = 1, each a cluster of its own.
struct SwapRun {
  const char* label;
  bool swap;
  double hot_threshold;
};
constexpr SwapRun kSwapRuns[] = {{"swap off", false, 4}, {"swap on, H_p=3", true, 3}, {"swap on, H_p=1", true, 1}};

// The tiered system's figures of the swap run `label`, or null.
const json* SwapRunNamed(const json& study, const std::string& label) {
  const json* run = FindIn(study, "swaps", "label", label);
  return run ? FindIn(*run, "systems", "system", "tiered") : nullptr;
}

// A target that is the ratio of two swap runs' throughput.
TargetCheck SwapTarget(const json& study, std::string name, const std::string& over, const std::string& under,
                       double goal, bool at_least) {
  TargetCheck t = Pending(std::move(name), fmt::format("{} ops/s / {} ops/s", over, under), goal, at_least, "");
  const json* a = SwapRunNamed(study, over);
  const json* b = SwapRunNamed(study, under);
  if (a == nullptr || b == nullptr) {
    t.note = fmt::format("the runs \"{}\" and \"{}\" did not both complete (see the study's notes)", over, under);
  } else if (b->value("throughput_ops", 0.0) <= 0) {
    t.note = fmt::format("\"{}\" measured no throughput", under);
  } else {
    const double ratio = a->value("throughput_ops", 0.0) / b->value("throughput_ops", 0.0);
    t.ratio = ratio;
    t.met = at_least ? ratio >= goal : ratio <= goal;
    t.shortfall = t.met ? 1 : (at_least ? goal / ratio : ratio / goal);
    t.note = fmt::format("one run each, one after another; swaps finished {} and {}", a->value("swaps_finished", 0),
                         b->value("swaps_finished", 0));
  }
  return t;
}

}  // namespace

json RunSuiteYcsbStudy(const SuiteAppStudyOptions& s) {
  json study{{"runs", json::array()}, {"not_available", json::array()}, {"notes", json::array()},
             {"swaps", json::array()}};
  for (const Cell& c : Cells()) {
    YcsbBenchOptions o = CellOptions(s, c);
    // Each system the bench can run for this workload; the others are
    // recorded with the bench's own reason.
    o.systems.clear();
    for (const std::string& system : kSystems) {
      YcsbBenchOptions one = o;
      one.systems = {system};
      const Status st = CheckYcsbBenchOptions(one);
      if (st.ok()) {
        o.systems.push_back(system);
      } else {
        study["not_available"].push_back({{"label", c.Label()}, {"system", system}, {"reason", st.message()}});
      }
    }
    if (o.systems.empty()) continue;
    if (s.progress)
      s.progress(fmt::format("ycsb: bench ycsb {} on {}, 2 racks x {} clients, {} records each", c.Label(),
                             fmt::join(o.systems, ","), o.clients, o.workload.records));
    Result<YcsbBenchResult> r = RunYcsbBench(o);
    if (!r.ok()) {
      study["notes"].push_back(c.Label() + ": " + r.status().ToString());
      continue;
    }
    json j = r->ToJson(o);
    j["label"] = c.Label();
    study["runs"].push_back(std::move(j));
  }
  // Hot-page swaps off and on (two H_p) on C, Zipf 0.99.
  for (const SwapRun& sr : kSwapRuns) {
    YcsbBenchOptions o = CellOptions(s, Cell{'C', "zipfian"});
    o.systems = {"tiered"};
    o.swap = sr.swap;
    o.hot_threshold = sr.hot_threshold;
    if (s.progress) s.progress(fmt::format("ycsb: bench ycsb C zipfian, tiered, {}", sr.label));
    Result<YcsbBenchResult> r = RunYcsbBench(o);
    if (!r.ok()) {
      study["notes"].push_back(std::string(sr.label) + ": " + r.status().ToString());
      continue;
    }
    json j = r->ToJson(o);
    j["label"] = sr.label;
    study["swaps"].push_back(std::move(j));
  }
  // The ablation ladder (seed 004 Fig. 18) on C, Zipf 0.99.
  const YcsbBenchOptions ladder = CellOptions(s, Cell{'C', "zipfian"});
  if (s.progress) s.progress("ycsb: the ablation ladder on C zipfian (bench ycsb --ablation)");
  Result<std::vector<YcsbAblationRung>> rungs = RunYcsbAblation(ladder);
  if (rungs.ok()) {
    study["ablation"] = YcsbAblationJson(ladder, *rungs);
  } else {
    study["notes"].push_back("ablation: " + rungs.status().ToString());
  }
  return study;
}

std::vector<TargetCheck> SuiteYcsbTargets(const json& study) {
  std::vector<TargetCheck> targets;
  TargetCheck tiered = Pending("ycsb tiered vs paging", "tiered ops/s / paging ops/s", 3, true, "");
  const json* run = FindIn(study, "runs", "label", "C zipfian");
  const json* t = run ? FindIn(*run, "systems", "system", "tiered") : nullptr;
  const json* p = run ? FindIn(*run, "systems", "system", "paging") : nullptr;
  if (t == nullptr || p == nullptr) {
    tiered.note = "the C zipfian run of tiered and paging did not complete (see the study's notes)";
  } else if (p->value("throughput_ops", 0.0) <= 0) {
    tiered.note = "paging measured no throughput";
  } else {
    const double ratio = t->value("throughput_ops", 0.0) / p->value("throughput_ops", 0.0);
    tiered.ratio = ratio;
    tiered.met = ratio >= tiered.goal;
    tiered.shortfall = tiered.met ? 1 : tiered.goal / ratio;
    tiered.note = fmt::format("one run; 1-minute load average {:.1f}", run->value("load_average_1m", 0.0));
  }
  targets.push_back(tiered);
  targets.push_back(SwapTarget(study, "ycsb swap on vs off", "swap on, H_p=3", "swap off", 1.2, true));
  targets.push_back(SwapTarget(study, "ycsb H_p=1 vs H_p=3", "swap on, H_p=1", "swap on, H_p=3", 1, false));
  return targets;
}

std::string SuiteYcsbStudyMarkdown(const json& study) {
  std::string md =
      "\n## The ycsb study (issue 16): YCSB on a hash-table KV store, 2 racks\n\n"
      "`pulse bench ycsb` (docs/ycsb.md; plot: ycsb.png): each workload and key distribution once, the systems "
      "side by side in one cluster. Throughput of all clients together; p99 per operation; counts per operation.\n\n"
      "| run | system | ops/s | p50 us | p99 us | msg/op | one-sided/op | local fraction | load avg |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (const json& run : study.value("runs", json::array()))
    for (const json& s : run.value("systems", json::array()))
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", run.value("label", ""),
                        s.value("system", ""), SuiteNumber(s.value("throughput_ops", 0.0)),
                        SuiteNumber(s.value("p50_us", 0.0)), SuiteNumber(s.value("p99_us", 0.0)),
                        SuiteNumber(s.value("messages_per_op", 0.0)), SuiteNumber(s.value("one_sided_per_op", 0.0)),
                        SuiteNumber(s.value("local_rack_fraction", 0.0)),
                        SuiteNumber(run.value("load_average_1m", 0.0)));
  for (const json& na : study.value("not_available", json::array()))
    md += fmt::format("| {} | {} | not available | | | | | | |\n", na.value("label", ""), na.value("system", ""));
  if (const auto swaps = study.find("swaps"); swaps != study.end() && !swaps->empty()) {
    md += "\nHot-page swaps (C zipfian, tiered; each run a cluster of its own, one after another):\n\n"
          "| run | ops/s | p99 us | msg/op | local fraction | swap requests | swaps finished |\n"
          "|---|---|---|---|---|---|---|\n";
    for (const json& run : *swaps)
      for (const json& t : run.value("systems", json::array()))
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", run.value("label", ""),
                          SuiteNumber(t.value("throughput_ops", 0.0)), SuiteNumber(t.value("p99_us", 0.0)),
                          SuiteNumber(t.value("messages_per_op", 0.0)), SuiteNumber(t.value("local_rack_fraction", 0.0)),
                          t.value("swap_requests", 0), t.value("swaps_finished", 0));
  }
  if (const auto ladder = study.find("ablation"); ladder != study.end()) {
    md += "\nThe ablation ladder (seed 004 Fig. 18; C zipfian, tiered; each rung a cluster of its own, one after "
          "another):\n\n| rung | ops/s | vs Base | p99 us | msg/op | one-sided/op | what it measures |\n"
          "|---|---|---|---|---|---|---|\n";
    for (const json& r : ladder->value("rungs", json::array())) {
      if (!r.value("built", false)) {
        md += fmt::format("| {} | not built | | | | | {} |\n", r.value("rung", ""), r.value("note", ""));
        continue;
      }
      md += fmt::format("| {} | {} | {}x | {} | {} | {} | {} |\n", r.value("rung", ""),
                        SuiteNumber(r.value("throughput_ops", 0.0)), SuiteNumber(r.value("speedup_vs_base", 0.0)),
                        SuiteNumber(r.value("p99_us", 0.0)), SuiteNumber(r.value("messages_per_op", 0.0)),
                        SuiteNumber(r.value("one_sided_per_op", 0.0)), r.value("measures", ""));
    }
  }
  for (const json& na : study.value("not_available", json::array()))
    md += fmt::format("\n- not available: {} on {}: {}", na.value("system", ""), na.value("label", ""),
                      na.value("reason", ""));
  for (const json& note : study.value("notes", json::array())) md += fmt::format("\n- failed: {}", note.get<std::string>());
  return md + "\n";
}

}  // namespace pulse::bench
