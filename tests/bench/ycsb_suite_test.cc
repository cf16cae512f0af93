// The suite's ycsb study (src/bench/suite_ycsb.h): its targets, report.md
// section and ycsb.png from a hand-built study as RunSuiteYcsbStudy records
// it; the study's name in the plan.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "bench/suite.h"
#include "bench/suite_ycsb.h"

namespace pulse::bench {
namespace {

using nlohmann::json;

json System(const std::string& name, double ops) {
  return {{"system", name}, {"throughput_ops", ops}, {"p50_us", 17.0}, {"p99_us", 4229.0},
          {"messages_per_op", 0.5}, {"one_sided_per_op", 0.0}, {"local_rack_fraction", 0.5}};
}

json HandStudy(double tiered, double paging) {
  json c = {{"label", "C zipfian"}, {"load_average_1m", 3.25},
            {"systems", json::array({System("tiered", tiered), System("paging", paging), System("all-local", 86048)})}};
  json a = {{"label", "A uniform"}, {"load_average_1m", 2.0}, {"systems", json::array({System("tiered", 100)})}};
  return json{{"runs", json::array({c, a})},
              {"not_available", json::array({{{"label", "A uniform"}, {"system", "object-rpc"}, {"reason", "no PUT handler"}}})},
              {"notes", json::array({"F zipfian: boom"})},
              {"ablation", {{"rungs", json::array({{{"rung", "Base"}, {"built", true}, {"throughput_ops", 1000.0},
                                                    {"speedup_vs_base", 1.0}, {"p99_us", 50.0},
                                                    {"messages_per_op", 0.5}, {"one_sided_per_op", 0.0},
                                                    {"measures", "offloaded"}},
                                                   {{"rung", "+double ring"}, {"built", false}, {"note", "not built: x"}}})}}},
              {"swaps", json::array()}};
}

// The study's swap runs: tiered on C zipfian, swap off / on at H_p = 3 / 1.
json SwapRun(const std::string& label, double ops, uint64_t swaps) {
  json tiered = System("tiered", ops);
  tiered["swap_requests"] = swaps + 1;
  tiered["swaps_finished"] = swaps;
  return {{"label", label}, {"systems", json::array({tiered})}};
}

const TargetCheck* Named(const std::vector<TargetCheck>& ts, const std::string& name) {
  for (const TargetCheck& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

TEST(YcsbSuiteStudy, TieredOverPagingIsTheRatioOfTheCZipfianRun) {
  const std::vector<TargetCheck> met = SuiteYcsbTargets(HandStudy(21000, 6000));
  const TargetCheck* t = Named(met, "ycsb tiered vs paging");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->ratio.has_value());
  EXPECT_DOUBLE_EQ(*t->ratio, 3.5);
  EXPECT_TRUE(t->met);
  EXPECT_EQ(t->nodes, 2u);

  const std::vector<TargetCheck> missed = SuiteYcsbTargets(HandStudy(12000, 6000));
  t = Named(missed, "ycsb tiered vs paging");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->met);
  EXPECT_DOUBLE_EQ(t->shortfall, 1.5);
}

TEST(YcsbSuiteStudy, WithoutTheRunsOrSwapsTargetsAreNotMeasured) {
  const std::vector<TargetCheck> ts = SuiteYcsbTargets(json{{"runs", json::array()}, {"swaps", json::array()}});
  ASSERT_EQ(ts.size(), 3u);
  for (const TargetCheck& t : ts) {
    EXPECT_FALSE(t.ratio.has_value()) << t.name;
    EXPECT_FALSE(t.met) << t.name;
    EXPECT_FALSE(t.note.empty()) << t.name;
  }
  EXPECT_NE(Named(ts, "ycsb swap on vs off")->note.find("did not both complete"), std::string::npos);
}

// swap on / off >= 1.2 (at H_p = 3), and H_p = 1 / H_p = 3 <= 1.
TEST(YcsbSuiteStudy, SwapTargetsAreRatiosOfTheSwapRuns) {
  json study = HandStudy(21000, 6000);
  study["swaps"] = json::array({SwapRun("swap off", 100000, 0), SwapRun("swap on, H_p=3", 500000, 12),
                                SwapRun("swap on, H_p=1", 600000, 13)});
  const std::vector<TargetCheck> ts = SuiteYcsbTargets(study);
  const TargetCheck* on_off = Named(ts, "ycsb swap on vs off");
  ASSERT_NE(on_off, nullptr);
  ASSERT_TRUE(on_off->ratio.has_value());
  EXPECT_DOUBLE_EQ(*on_off->ratio, 5.0);
  EXPECT_TRUE(on_off->met);
  const TargetCheck* hp = Named(ts, "ycsb H_p=1 vs H_p=3");
  ASSERT_NE(hp, nullptr);
  ASSERT_TRUE(hp->ratio.has_value());
  EXPECT_DOUBLE_EQ(*hp->ratio, 1.2);
  EXPECT_FALSE(hp->met) << "H_p = 1 must not beat H_p = 3";
  EXPECT_DOUBLE_EQ(hp->shortfall, 1.2);
  const std::string report = SuiteYcsbStudyMarkdown(study);
  EXPECT_NE(report.find("| swap on, H_p=3 | 500000 | 4229 | 0.50 | 0.50 | 13 | 12 |"), std::string::npos) << report;
}

TEST(YcsbSuiteStudy, ReportHasTheTableTheMissingSystemsAndTheFailures) {
  SuiteResult res;
  res.app_studies["ycsb"] = HandStudy(21000, 6000);
  const std::string report = SuiteReport(SuiteOptions{}, res);
  EXPECT_NE(report.find("## The ycsb study (issue 16)"), std::string::npos) << report;
  EXPECT_NE(report.find("| C zipfian | tiered | 21000 | 17.0 | 4229 | 0.50 | 0.00 | 0.50 | 3.25 |"), std::string::npos)
      << report;
  EXPECT_NE(report.find("| A uniform | object-rpc | not available |"), std::string::npos) << report;
  EXPECT_NE(report.find("- not available: object-rpc on A uniform: no PUT handler"), std::string::npos) << report;
  EXPECT_NE(report.find("- failed: F zipfian: boom"), std::string::npos) << report;
  EXPECT_NE(report.find("| Base | 1000 | 1.00x | 50.0 | 0.50 | 0.00 | offloaded |"), std::string::npos) << report;
  EXPECT_NE(report.find("| +double ring | not built | | | | | not built: x |"), std::string::npos) << report;
}

TEST(YcsbSuiteStudy, IsAStudyTheSuitePlans) {
  SuiteOptions o;
  o.studies = {"ycsb"};
  EXPECT_TRUE(PlanSuite(o).ok());
  EXPECT_NE(std::find(SuiteStudyNames().begin(), SuiteStudyNames().end(), "ycsb"), SuiteStudyNames().end());
}

TEST(YcsbSuiteStudy, PlotScriptWritesYcsbPng) {
  const std::string python = SuitePlotPython();
  if (python.empty()) GTEST_SKIP() << "python3 with matplotlib is not installed (scripts/setup.sh installs it)";
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("ycsb-suite-plot-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SuiteResult res;
  res.app_studies["ycsb"] = HandStudy(21000, 6000);
  {
    std::ofstream f(dir / "results.json");
    f << SuiteResultJson(SuiteOptions{}, res).dump();
  }
  const std::string cmd = fmt::format("{} '{}/scripts/plot_suite.py' '{}'", python, PULSE_SOURCE_DIR, dir.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_TRUE(std::filesystem::exists(dir / "ycsb.png"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pulse::bench
