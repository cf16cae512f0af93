// The synthetic micro-PMU stream: deterministic per seed, values in the
// ranges the model documents, encodings that round-trip.
#include "pulse/apps/upmu.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pulse::apps {
namespace {

TEST(Upmu, SameSeedSameStreamOtherSeedOther) {
  UpmuGenerator a(1), b(1), c(2);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const UpmuReading x = a.Next(), y = b.Next(), z = c.Next();
    EXPECT_EQ(x.tick, static_cast<uint64_t>(i));
    EXPECT_EQ(x.value, y.value);
    differs |= x.value != z.value;
  }
  EXPECT_TRUE(differs);
}

TEST(Upmu, ValuesLookLikeA7kVFeeder) {
  UpmuGenerator g(42);
  double lag_sum = 0;
  const int n = 120 * 600;  // ten minutes
  for (int i = 0; i < n; ++i) {
    const UpmuReading r = g.Next();
    for (int p = 0; p < 3; ++p) {
      EXPECT_NEAR(r.value[p], 7200, 7200 * 0.02);
      EXPECT_NEAR(r.value[6 + p], 200, 200 * 0.2);
      for (int a : {3 + p, 9 + p}) {
        EXPECT_GT(r.value[a], -180.0);
        EXPECT_LE(r.value[a], 180.0);
      }
      lag_sum += std::remainder(r.value[3 + p] - r.value[9 + p], 360.0);
    }
    // Phases 120 degrees apart.
    EXPECT_NEAR(std::remainder(r.value[3] - r.value[4], 360.0), 120, 0.5);
  }
  EXPECT_NEAR(lag_sum / (3.0 * n), 18, 0.1);
}

TEST(Upmu, EncodingRoundTrips) {
  UpmuGenerator g(3);
  for (int i = 0; i < 1000; ++i) {
    const UpmuReading r = g.Next();
    for (uint32_t c = 0; c < kUpmuChannels; ++c) {
      const auto ch = static_cast<UpmuChannel>(c);
      const double back = UpmuGenerator::Decode(ch, UpmuGenerator::Encode(ch, r[ch]));
      EXPECT_NEAR(back, r[ch], 1e-3) << UpmuChannelName(ch);
    }
  }
}

}  // namespace
}  // namespace pulse::apps
