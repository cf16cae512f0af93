// ExtentAllocator (src/net/ring_extents.h) against a plain bitmap of units:
// random allocations and frees in any order, every answer checked.
#include "net/ring_extents.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace pulse::net::ring {
namespace {

TEST(RingExtents, FirstFitAgainstABitmapOfUnits) {
  constexpr size_t kUnit = 64;
  constexpr size_t kUnits = 256;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    ExtentAllocator a(kUnits * kUnit, kUnit);
    std::vector<bool> used(kUnits, false);
    std::map<size_t, size_t> live;  // offset -> bytes asked for
    std::mt19937 rng(seed);
    for (int step = 0; step < 3000; ++step) {
      if (live.empty() || rng() % 2 == 0) {
        const size_t bytes = rng() % (12 * kUnit);
        const size_t units = std::max<size_t>(1, (bytes + kUnit - 1) / kUnit);
        // The reference: the lowest run of `units` free units.
        std::optional<size_t> expect;
        for (size_t i = 0, run = 0; i < kUnits; ++i) {
          run = used[i] ? 0 : run + 1;
          if (run == units) {
            expect = (i + 1 - units) * kUnit;
            break;
          }
        }
        std::optional<size_t> got = a.Allocate(bytes);
        ASSERT_EQ(got, expect) << "seed " << seed << " step " << step << " bytes " << bytes;
        if (got.has_value()) {
          for (size_t u = *got / kUnit; u < *got / kUnit + units; ++u) used[u] = true;
          live[*got] = bytes;
        }
      } else {
        auto it = live.begin();
        std::advance(it, rng() % live.size());
        a.Free(it->first, it->second);
        const size_t units = std::max<size_t>(1, (it->second + kUnit - 1) / kUnit);
        for (size_t u = it->first / kUnit; u < it->first / kUnit + units; ++u) used[u] = false;
        live.erase(it);
      }
      size_t free_units = 0;
      size_t largest = 0;
      for (size_t i = 0, run = 0; i < kUnits; ++i) {
        run = used[i] ? 0 : run + 1;
        free_units += used[i] ? 0 : 1;
        largest = std::max(largest, run);
      }
      ASSERT_EQ(a.free_bytes(), free_units * kUnit);
      ASSERT_EQ(a.largest_free(), largest * kUnit) << "free extents not merged";
    }
  }
}

TEST(RingExtentsDeathTest, FreeingWhatWasNotAllocatedAborts) {
  ExtentAllocator a(1024, 64);
  const size_t at = *a.Allocate(100);
  EXPECT_DEATH(a.Free(at + 512, 64), "not an allocated extent");
  a.Free(at, 100);
  EXPECT_DEATH(a.Free(at, 100), "not an allocated extent");
  EXPECT_EQ(a.free_bytes(), 1024u);
}

}  // namespace
}  // namespace pulse::net::ring
