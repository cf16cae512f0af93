// `pulse bench tier`'s swap study (src/bench/tier_swap_bench.h) on a tiny
// scale against real local clusters of two racks: every read checked
// against the last write; with swaps off nothing moves and every access
// crosses the fabric; with swaps on the client's hot pages of the other
// rack move into its rack, with what they hold.  Counted, not timed.
#include "bench/tier_swap_bench.h"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace pulse::bench {
namespace {

TierSwapOptions Tiny() {
  TierSwapOptions o;
  o.ops = 3000;
  o.objects = 8192;  // 8 pages of 64 KiB (the memory nodes' allocation granularity)
  o.page_bytes = 64 << 10;
  // 256 pages a node: each swap pushes the directory whole, and under the
  // sanitizers a large one is slow to adopt.
  o.pool_mib = 16;
  o.binary = PULSE_BINARY;
  o.run_dir = (std::filesystem::path(::testing::TempDir()) / fmt::format("tier-swap-{}", getpid())).string();
  return o;
}

TEST(TierSwapStudy, SwapsBringTheClientsHotPagesIntoItsRack) {
  const TierSwapOptions o = Tiny();
  auto r = RunTierSwapStudy(o);
  std::filesystem::remove_all(o.run_dir);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  const std::vector<std::pair<std::string, std::string>> order = {
      {"off", "uniform"}, {"off", "zipfian"}, {"on", "uniform"}, {"on", "zipfian"}};
  for (size_t i = 0; i < order.size(); ++i) {
    const TierSwapFigure& f = (*r)[i];
    EXPECT_EQ(f.swap, order[i].first);
    EXPECT_EQ(f.distribution, order[i].second);
    EXPECT_EQ(f.ops, 3000u);
    EXPECT_EQ(f.verified_reads, f.read.count) << "every read checked";
    EXPECT_GT(f.read.count, 1000u);
    EXPECT_GT(f.write.count, 1000u);
    if (f.swap == "off") {
      EXPECT_EQ(f.local_fraction, 0.0) << "nothing moves: every access goes to rack b";
      EXPECT_EQ(f.swaps_finished, 0u);
      EXPECT_EQ(f.swaps_failed, 0u);
      EXPECT_EQ(f.swap_requests, 0u);
    } else {
      // 3000 accesses over 8 pages: each becomes hot (5 accesses) early,
      // moves once, and the accesses after the move are the rack's (the
      // objects' first writes are one per page: no page is hot before).
      EXPECT_GE(f.swaps_finished, 1u);
      EXPECT_EQ(f.swaps_failed, 0u) << f.last_failure;
      EXPECT_EQ(f.swap_outcomes.count("rejected"), 0u);
      EXPECT_GT(f.local_fraction, 0.0) << f.distribution;
    }
  }
}

TEST(TierSwapStudy, RefusesBadOptionsByName) {
  TierSwapOptions o = Tiny();
  o.swaps = {"maybe"};
  EXPECT_NE(CheckTierSwapOptions(o).message().find("--swap maybe"), std::string::npos);
  o = Tiny();
  o.distributions = {"latest"};
  EXPECT_NE(CheckTierSwapOptions(o).message().find("--distribution latest"), std::string::npos);
  o = Tiny();
  o.object_bytes = 3000;
  EXPECT_NE(CheckTierSwapOptions(o).message().find("--object-bytes"), std::string::npos);
  o = Tiny();
  o.page_bytes = 5000;
  EXPECT_NE(CheckTierSwapOptions(o).message().find("--page-kib"), std::string::npos);
  o = Tiny();
  o.pool_mib = 8;
  EXPECT_NE(CheckTierSwapOptions(o).message().find("--pool-mib 8"), std::string::npos);
  EXPECT_TRUE(CheckTierSwapOptions(Tiny()).ok());
}

}  // namespace
}  // namespace pulse::bench
