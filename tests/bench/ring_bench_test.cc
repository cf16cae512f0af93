// pulse bench ring (src/bench/ring_bench.h) at a small scale: both layouts
// run and count every entry; under slow entries in a small ring the slots
// layout refuses posts (a slow entry's slot is busy a lap later) and the
// double layer refuses none; bad options are refused by name.
#include "bench/ring_bench.h"

#include <gtest/gtest.h>

namespace pulse::bench {
namespace {

TEST(RingBench, SlowEntriesHoldBackTheSlotsLayoutOnlyAndEveryEntryIsCounted) {
  RingBenchOptions o;
  o.slots = 16;
  o.in_flight = 8;
  o.entries = 3000;
  o.slow_fraction = 0.1;
  o.slow_us = 300;
  auto r = RunRingBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->layouts.size(), 2u);
  for (const RingLayoutResult& l : r->layouts) {
    EXPECT_EQ(l.fast.count + l.slow.count, o.entries) << l.layout;
    EXPECT_GT(l.slow.count, 0u) << l.layout;
    // A slow entry waits at least its delay.
    EXPECT_GE(l.slow.p50_us, o.slow_us) << l.layout;
  }
  EXPECT_EQ(r->layouts[0].layout, "slots");
  EXPECT_GT(r->layouts[0].refused_full, 0u) << "no slow entry's slot came round busy";
  EXPECT_GT(r->layouts[0].entries_waited, 0u);
  EXPECT_LE(r->layouts[0].entries_waited, o.entries);
  EXPECT_EQ(r->layouts[1].layout, "double");
  EXPECT_EQ(r->layouts[1].refused_full + r->layouts[1].refused_space, 0u);
  EXPECT_EQ(r->layouts[1].entries_waited, 0u);
  nlohmann::json j = r->ToJson(o);
  EXPECT_EQ(j["layouts"]["double"]["fast"]["count"], r->layouts[1].fast.count);
}

TEST(RingBench, BadOptionsAreRefusedByName) {
  RingBenchOptions o;
  o.layouts = {"triple"};
  auto r = RunRingBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("triple"), std::string::npos);
  o.layouts = {"slots"};
  o.payload_bytes = o.slot_bytes;  // no room for header and trailer
  r = RunRingBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--payload"), std::string::npos);
}

}  // namespace
}  // namespace pulse::bench
