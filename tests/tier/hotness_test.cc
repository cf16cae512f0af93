// Hot-page identification with an injected clock: the rules (hot on
// the 5th back-to-back access; a gap over T_l resets), the formula against
// a plain re-statement of seed 004 section 5.3, read-hotness, decay and
// expiry between accesses, the parameters, and a rack's summed heat.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "pulse/tier/hotness.h"

namespace pulse::tier {
namespace {

TEST(Hotness, BackToBackAccessesMakeAPageHotOnTheFifth) {
  ManualClock clock;
  clock.Set(1000);
  HotnessTracker t(HotnessParams{}, &clock);
  for (int i = 1; i <= 4; ++i) {
    const PageHeat h = t.Record(7, AccessKind::kWrite);
    EXPECT_DOUBLE_EQ(h.hotness, i);
    EXPECT_FALSE(h.hot) << "access " << i;
  }
  const PageHeat fifth = t.Record(7, AccessKind::kWrite);
  EXPECT_DOUBLE_EQ(fifth.hotness, 5);
  EXPECT_TRUE(fifth.hot);
  EXPECT_FALSE(t.Record(8, AccessKind::kWrite).hot);  // other pages are counted apart
}

TEST(Hotness, AGapOverTheLifetimeResetsThePage) {
  ManualClock clock;
  HotnessTracker t(HotnessParams{}, &clock);
  for (int i = 0; i < 4; ++i) t.Record(1, AccessKind::kRead);
  clock.Advance(100.001);  // > T_l = 100 s: expired
  PageHeat h = t.Record(1, AccessKind::kRead);
  EXPECT_DOUBLE_EQ(h.hotness, 1);
  EXPECT_EQ(h.reads, 1u);
  EXPECT_FALSE(h.hot);
  // It takes 4 more back-to-back accesses to be hot again.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(t.Record(1, AccessKind::kRead).hot);
  EXPECT_TRUE(t.Record(1, AccessKind::kRead).hot);

  // A gap of exactly T_l is not over it: the counts decay but stay.
  for (int i = 0; i < 4; ++i) t.Record(2, AccessKind::kRead);
  clock.Advance(100);
  h = t.Record(2, AccessKind::kRead);
  EXPECT_DOUBLE_EQ(h.hotness, std::exp(-0.04 * 100) * 4 + 1);
  EXPECT_EQ(h.reads, 5u);
}

// The paper's rule written out plainly, driven with random accesses and
// gaps on a few pages; the tracker must agree to the bit.
TEST(Hotness, FollowsThePapersFormula) {
  const HotnessParams params{30, 2.5, 0.1, 0.9};
  ManualClock clock;
  HotnessTracker t(params, &clock);
  struct Plain {
    double cur_r = 0, cur_w = 0, last = 0;
    bool seen = false;
  };
  std::map<PageId, Plain> plain;
  std::mt19937_64 rng(5);
  std::exponential_distribution<double> gap(1.0 / 8);
  for (int i = 0; i < 20000; ++i) {
    clock.Advance(rng() % 3 == 0 ? gap(rng) : 0.0);
    const PageId page = rng() % 5;
    const bool read = rng() % 3 != 0;
    Plain& p = plain[page];
    const double now = clock.NowSeconds();
    const double dt = p.seen ? now - p.last : 0;
    if (dt > params.lifetime_s) p.cur_r = p.cur_w = 0;
    const double hotness = std::exp(-params.decay * dt) * (p.cur_r + p.cur_w) + 1;
    (read ? p.cur_r : p.cur_w) += 1;
    p.last = now;
    p.seen = true;
    const bool hot = hotness > params.hot_threshold;
    const bool read_hot = hot && (p.cur_w == 0 || p.cur_r / p.cur_w > params.read_ratio);

    const PageHeat h = t.Record(page, read ? AccessKind::kRead : AccessKind::kWrite);
    ASSERT_DOUBLE_EQ(h.hotness, hotness) << i;
    ASSERT_EQ(h.reads, p.cur_r);
    ASSERT_EQ(h.writes, p.cur_w);
    ASSERT_EQ(h.hot, hot) << i;
    ASSERT_EQ(h.read_hot, read_hot) << i;
  }
}

TEST(Hotness, ReadHotNeedsReadsOverWritesAboveTheRatio) {
  ManualClock clock;
  HotnessTracker t(HotnessParams{}, &clock);
  auto run = [&](PageId page, int reads, int writes) {
    PageHeat h;
    for (int i = 0; i < writes; ++i) h = t.Record(page, AccessKind::kWrite);
    for (int i = 0; i < reads; ++i) h = t.Record(page, AccessKind::kRead);
    return h;
  };
  PageHeat h = run(1, 5, 0);  // never written
  EXPECT_TRUE(h.hot && h.read_hot);
  h = run(2, 3, 2);  // 1.5 > 0.9
  EXPECT_TRUE(h.hot && h.read_hot);
  h = run(3, 2, 3);  // 0.67
  EXPECT_TRUE(h.hot);
  EXPECT_FALSE(h.read_hot);
  h = run(4, 0, 5);
  EXPECT_TRUE(h.hot);
  EXPECT_FALSE(h.read_hot);
  h = run(5, 4, 0);  // read-only but not hot: not read-hot either
  EXPECT_FALSE(h.hot || h.read_hot);
}

TEST(Hotness, PeekDecaysAndExpiresWithoutCounting) {
  ManualClock clock;
  HotnessTracker t(HotnessParams{}, &clock);
  EXPECT_DOUBLE_EQ(t.Peek(1).hotness, 0);
  for (int i = 0; i < 5; ++i) t.Record(1, AccessKind::kRead);
  PageHeat h = t.Peek(1);
  EXPECT_DOUBLE_EQ(h.hotness, 5);
  EXPECT_TRUE(h.hot);
  clock.Advance(10);
  h = t.Peek(1);
  EXPECT_DOUBLE_EQ(h.hotness, 5 * std::exp(-0.04 * 10));  // 3.35: no longer hot
  EXPECT_FALSE(h.hot);
  EXPECT_EQ(h.reads, 5u);  // peeking counts nothing
  clock.Advance(90.5);
  h = t.Peek(1);
  EXPECT_DOUBLE_EQ(h.hotness, 0);
  EXPECT_EQ(h.reads, 0u);
  t.Forget(1);
  clock.Set(0);
  EXPECT_DOUBLE_EQ(t.Peek(1).hotness, 0);
  EXPECT_DOUBLE_EQ(t.Record(1, AccessKind::kRead).hotness, 1);  // starts over
}

TEST(Hotness, ParametersAreConfigurable) {
  ManualClock clock;
  HotnessParams eager;
  eager.hot_threshold = 1;
  HotnessTracker t(eager, &clock);
  EXPECT_FALSE(t.Record(1, AccessKind::kRead).hot);
  EXPECT_TRUE(t.Record(1, AccessKind::kRead).hot);  // H_p = 1: hot on the 2nd

  HotnessParams short_life;
  short_life.lifetime_s = 1;
  HotnessTracker s(short_life, &clock);
  for (int i = 0; i < 4; ++i) s.Record(1, AccessKind::kRead);
  clock.Advance(1.5);
  EXPECT_DOUBLE_EQ(s.Record(1, AccessKind::kRead).hotness, 1);

  EXPECT_TRUE(HotnessParams{}.Validate().ok());
  for (HotnessParams bad : {HotnessParams{0, 4, 0.04, 0.9}, HotnessParams{100, -1, 0.04, 0.9},
                            HotnessParams{100, 4, -0.1, 0.9}, HotnessParams{100, 4, 0.04, -1},
                            HotnessParams{NAN, 4, 0.04, 0.9}, HotnessParams{100, INFINITY, 0.04, 0.9}})
    EXPECT_EQ(bad.Validate().code(), Status::Code::kInvalidArgument);
}

TEST(Hotness, ARacksHeatIsTheSumOfItsCpuNodes) {
  ManualClock clock;
  HotnessParams params;
  HotnessTracker a(params, &clock), b(params, &clock);
  for (int i = 0; i < 3; ++i) a.Record(9, AccessKind::kRead);
  for (int i = 0; i < 2; ++i) b.Record(9, AccessKind::kWrite);
  const HotnessTracker* both[] = {&a, &b};
  PageHeat sum = SumHeat(both, 9, params);
  EXPECT_DOUBLE_EQ(sum.hotness, 5);  // 3 + 2: neither node alone is hot, the rack is
  EXPECT_TRUE(sum.hot);
  EXPECT_EQ(sum.reads, 3u);
  EXPECT_EQ(sum.writes, 2u);
  EXPECT_TRUE(sum.read_hot);  // 1.5 > 0.9
  EXPECT_FALSE(a.Peek(9).hot);
  const HotnessTracker* none[] = {&a};
  EXPECT_DOUBLE_EQ(SumHeat(none, 10, params).hotness, 0);
}

TEST(Hotness, TheSteadyClockNeverGoesBack) {
  SteadyClock clock;
  double last = clock.NowSeconds();
  for (int i = 0; i < 1000; ++i) {
    const double now = clock.NowSeconds();
    ASSERT_GE(now, last);
    last = now;
  }
}

}  // namespace
}  // namespace pulse::tier
