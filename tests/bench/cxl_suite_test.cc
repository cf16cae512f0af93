// The suite's cxl study (src/bench/suite_cxl.h) in report.md and cxl.png,
// from a hand-built study as RunSuiteCxlStudy records it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "bench/suite.h"
#include "bench/suite_cxl.h"

namespace pulse::bench {
namespace {

nlohmann::json HandStudy() {
  using nlohmann::json;
  json rows = json::array();
  for (uint32_t nodes : {1u, 4u})
    rows.push_back({{"app", "wiredtiger"}, {"nodes", nodes}, {"local_ns_per_op", 4400.0}, {"cxl_ns_per_op", 7785.0},
                    {"cxl_pulse_ns_per_op", 6504.0}, {"cxl_slowdown", 1.77}, {"cxl_pulse_slowdown", 1.48},
                    {"cxl_pulse_native_slowdown", 1.2}, {"continuations_per_op", nodes == 1 ? 0.0 : 41.0}});
  return json{{"runs", {{{"label", "apps"}, {"rows", rows}}, {{"label", "apps cache=1%"}, {"rows", rows}}}}, {"notes", {"webservice chain=100: boom"}}};
}

TEST(CxlSuiteStudy, ReportHasTheTableAndTheFailures) {
  SuiteResult res;
  res.app_studies["cxl"] = HandStudy();
  const std::string report = SuiteReport(SuiteOptions{}, res);
  EXPECT_NE(report.find("## The cxl study (issue 16): a model, not a measurement"), std::string::npos) << report;
  EXPECT_NE(report.find("| apps | wiredtiger | 4 | 4400 | 7785 | 6504 | 1.77x | 1.48x | 1.20x | 41.0 |"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("- failed: webservice chain=100: boom"), std::string::npos) << report;
}

TEST(CxlSuiteStudy, PlotScriptWritesCxlPng) {
  const std::string python = SuitePlotPython();
  if (python.empty()) GTEST_SKIP() << "python3 with matplotlib is not installed (scripts/setup.sh installs it)";
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("cxl-suite-plot-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SuiteResult res;
  res.app_studies["cxl"] = HandStudy();
  {
    std::ofstream f(dir / "results.json");
    f << SuiteResultJson(SuiteOptions{}, res).dump();
  }
  const std::string cmd = fmt::format("{} '{}/scripts/plot_suite.py' '{}'", python, PULSE_SOURCE_DIR, dir.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_TRUE(std::filesystem::exists(dir / "cxl.png"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pulse::bench
