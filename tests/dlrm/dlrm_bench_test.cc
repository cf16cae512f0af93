// pulse bench dlrm end to end on a small model: both systems run, every
// answer is verified, the figures the command reports are there, and bad
// options are refused.
#include "bench/dlrm_bench.h"

#include <gtest/gtest.h>

#include <iostream>

#include "support/local_rack.h"

namespace pulse::bench {
namespace {

DlrmBenchOptions SmallRun() {
  DlrmBenchOptions o;
  o.tables = 3;
  o.rows = 500;
  o.dim = 80;  // two chunks per row, the second padded
  o.lookups = 20;
  o.seconds = 0.3;
  o.warmup_queries = 5;
  o.binary = PULSE_BINARY;
  o.progress = [](const std::string& line) { std::cerr << "[bench dlrm] " << line << std::endl; };
  return o;
}

TEST(DlrmBench, BothSystemsAnswerAsTheReference) {
  pulse::testing::SetUcxTestEnvironment();
  for (const char* reduction : {"sum", "max"}) {
    DlrmBenchOptions o = SmallRun();
    o.reduction = reduction;
    o.distribution = reduction == std::string("sum") ? "zipf" : "uniform";
    auto r = RunDlrmBench(o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->systems.size(), 2u);
    EXPECT_EQ(DlrmMismatches(*r), 0u);
    for (const DlrmSystemResult& s : r->systems) {
      EXPECT_GT(s.queries, 0u) << s.system;
      EXPECT_GE(s.verified, s.queries) << s.system;
    }
    // Offloaded: 3 tables x 2 lane groups x ceil(20 / 16) traversals, each row chunk loaded once.
    EXPECT_DOUBLE_EQ(r->systems[0].traversals_per_query, 12.0);
    EXPECT_DOUBLE_EQ(r->systems[0].rows_loaded_per_query, 120.0);
    // Gathered: at most one read per lookup (distinct rows of a bag).
    EXPECT_LE(r->systems[1].rows_loaded_per_query, 60.0);
    const nlohmann::json j = DlrmBenchJson(o, *r);
    EXPECT_TRUE(j["all_verified"].get<bool>());
    EXPECT_TRUE(j["systems"].contains("offload") && j["systems"].contains("gather"));
  }
}

TEST(DlrmBench, RefusesBadOptions) {
  DlrmBenchOptions o = SmallRun();
  o.distribution = "normal";
  EXPECT_EQ(RunDlrmBench(o).status().code(), Status::Code::kInvalidArgument);
  o = SmallRun();
  o.reduction = "mean";
  EXPECT_EQ(RunDlrmBench(o).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace pulse::bench
