// The poll-window benchmark runs end to end and prints well-formed JSON.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include <gtest/gtest.h>

#include "bench/net_bench.h"

namespace pulse::net {
namespace {

TEST(NetBench, SmallRunPrintsResultsForEveryWindow) {
  NetBenchOptions o;
  o.warmup = 20;
  o.iterations = 200;
  o.paced_iterations = 20;
  o.paced_gap_us = 200;
  o.idle_ms = 20;
  o.windows_us = {0, 50, -1};
  FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  o.out = out;
  EXPECT_EQ(RunNetBench(o), 0);
  std::rewind(out);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), out)) > 0) text.append(buf, n);
  std::fclose(out);
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << text;
  ASSERT_EQ(j["results"].size(), 3u) << text;
  for (const auto& r : j["results"]) {
    ASSERT_FALSE(r.contains("error")) << r.dump();
    EXPECT_EQ(r["back_to_back"]["round_trips"], 200);
    double median = r["back_to_back"]["one_way_us"]["median"];
    EXPECT_GT(median, 0.0);
    EXPECT_LE(median, r["back_to_back"]["one_way_us"]["p99"].get<double>());
    EXPECT_GE(r["idle"]["server_cpu_percent"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["results"][2]["mode"], "busy");
  EXPECT_TRUE(j.contains("suggested_poll_window_us")) << text;
}

}  // namespace
}  // namespace pulse::net
