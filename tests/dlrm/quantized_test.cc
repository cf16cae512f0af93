// Quantized rows and the reference reduction, without a cluster.
#include "pulse/dlrm/quantized.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace pulse::dlrm {
namespace {

TEST(DlrmQuantized, RowRoundTripsWithinHalfAStep) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> x(0.0f, 0.3f);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> row(64);
    for (float& v : row) v = x(rng);
    const QuantizedRow q = QuantizeRow(row);
    ASSERT_EQ(q.values.size(), row.size());
    const double scale = ToReal(q.scale);
    for (size_t j = 0; j < row.size(); ++j) {
      EXPECT_GE(q.values[j], -127);
      EXPECT_NEAR(ToReal(static_cast<int64_t>(q.values[j]) * q.scale), row[j], scale / 2 + 1e-12) << j;
    }
  }
}

TEST(DlrmQuantized, ZeroRowGetsTheSmallestScale) {
  const QuantizedRow q = QuantizeRow(std::vector<float>(8, 0.0f));
  EXPECT_EQ(q.scale, 1u);
  for (int8_t v : q.values) EXPECT_EQ(v, 0);
}

TEST(DlrmQuantized, ReferenceReducesExactlyInIntegers) {
  std::vector<QuantizedRow> rows = {{3, {1, -2, 127}}, {5, {-128, 4, 0}}};
  auto sum = ReferenceReduce(Reduction::kSum, rows, 3, std::vector<uint64_t>{0, 1, 1});
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ(*sum, (ReducedVector{3 - 1280, -6 + 40, 381}));
  auto mx = ReferenceReduce(Reduction::kMax, rows, 3, std::vector<uint64_t>{0, 1});
  ASSERT_TRUE(mx.ok());
  EXPECT_EQ(*mx, (ReducedVector{3, 20, 381}));
  auto mn = ReferenceReduce(Reduction::kMin, rows, 3, std::vector<uint64_t>{0, 1});
  ASSERT_TRUE(mn.ok());
  EXPECT_EQ(*mn, (ReducedVector{-640, -6, 0}));
}

TEST(DlrmQuantized, EmptyBagIsZerosForEveryOperator) {
  std::vector<QuantizedRow> rows = {{3, {1, 2}}};
  for (Reduction op : {Reduction::kSum, Reduction::kMax, Reduction::kMin}) {
    auto r = ReferenceReduce(op, rows, 2, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, (ReducedVector{0, 0})) << ReductionName(op);
  }
}

TEST(DlrmQuantized, ReferenceNamesAnOutOfRangeIndex) {
  std::vector<QuantizedRow> rows = {{3, {1}}, {3, {2}}};
  auto r = ReferenceReduce(Reduction::kSum, rows, 1, std::vector<uint64_t>{1, 2});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("index 2"), std::string::npos) << r.status().ToString();
}

TEST(DlrmQuantized, CombiningPartsEqualsFoldingTheWhole) {
  std::mt19937_64 rng(11);
  for (Reduction op : {Reduction::kSum, Reduction::kMax, Reduction::kMin}) {
    std::vector<QuantizedRow> rows(20);
    for (QuantizedRow& r : rows) {
      r.scale = static_cast<uint32_t>(rng());
      for (int j = 0; j < 4; ++j) r.values.push_back(static_cast<int8_t>(rng()));
    }
    ReducedVector whole(4, ReductionIdentity(op)), a(4, ReductionIdentity(op)), b(4, ReductionIdentity(op));
    for (size_t i = 0; i < rows.size(); ++i) {
      FoldRow(op, rows[i].scale, rows[i].values, whole);
      FoldRow(op, rows[i].scale, rows[i].values, i % 3 == 0 ? a : b);
    }
    CombineAccumulators(op, a, b);
    EXPECT_EQ(b, whole) << ReductionName(op);
  }
}

TEST(DlrmQuantized, ParsesReductionNames) {
  EXPECT_EQ(*ParseReduction("max"), Reduction::kMax);
  EXPECT_FALSE(ParseReduction("mean").ok());
}

}  // namespace
}  // namespace pulse::dlrm
