#include <gtest/gtest.h>

#include <map>
#include <random>

#include "pulse/memory.h"

namespace pulse {
namespace {

TEST(RangeTable, RejectsOverlapsAndEmptyRanges) {
  RangeTable t;
  ASSERT_TRUE(t.Add({0x1000, 0x1000, nullptr}).ok());
  EXPECT_FALSE(t.Add({0x1800, 0x100, nullptr}).ok());
  EXPECT_FALSE(t.Add({0x0800, 0x1000, nullptr}).ok());
  EXPECT_FALSE(t.Add({0x3000, 0, nullptr}).ok());
  EXPECT_FALSE(t.Add({~0ull - 10, 100, nullptr}).ok());
  EXPECT_TRUE(t.Add({0x2000, 0x10, nullptr}).ok());  // adjacent is fine
  EXPECT_FALSE(t.Remove(0x1234).ok());
  EXPECT_TRUE(t.Remove(0x1000).ok());
  EXPECT_EQ(t.Find(0x1000), nullptr);
}

TEST(RangeTable, FindMatchesLinearScan) {
  RangeTable t;
  std::mt19937_64 rng(7);
  std::vector<Range> added;
  uint64_t at = 0x10000;
  for (int i = 0; i < 200; ++i) {
    at += rng() % 4096;  // gaps
    Range r{at, 1 + rng() % 8192, nullptr};
    ASSERT_TRUE(t.Add(r).ok());
    added.push_back(r);
    at += r.length;
  }
  for (int i = 0; i < 20000; ++i) {
    const uint64_t addr = 0x10000 + rng() % (at - 0x10000 + 100);
    const Range* want = nullptr;
    for (const auto& r : added)
      if (r.Contains(addr)) want = &r;
    const Range* got = t.Find(addr);
    ASSERT_EQ(got == nullptr, want == nullptr) << addr;
    if (got) {
      EXPECT_EQ(got->base, want->base);
    }
  }
}

}  // namespace
}  // namespace pulse
