// The YCSB streams of `pulse bench ycsb` (src/bench/ycsb_workload.h): the
// operation mixes of A, B, C, D and F, and the key distributions' shape
// against their definitions (fixed seeds, tolerances of a few standard
// deviations of the binomial count).
#include "bench/ycsb_workload.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include <gtest/gtest.h>

namespace pulse::bench {
namespace {

namespace ycsb = apps::ycsb;

YcsbWorkloadOptions Options(char workload, const std::string& distribution, uint64_t records = 100000) {
  YcsbWorkloadOptions o;
  o.workload = workload;
  o.distribution = distribution;
  o.records = records;
  return o;
}

// |count / n - p| within 5 binomial standard deviations.
void ExpectShare(uint64_t count, uint64_t n, double p, const std::string& what) {
  const double sd = std::sqrt(p * (1 - p) / static_cast<double>(n));
  EXPECT_NEAR(static_cast<double>(count) / static_cast<double>(n), p, 5 * sd + 1e-12) << what;
}

TEST(YcsbWorkload, OperationMixesFollowTheWorkloads) {
  struct Mix {
    char w;
    double read, update, insert, rmw;
  };
  const Mix mixes[] = {{'A', 0.5, 0.5, 0, 0}, {'B', 0.95, 0.05, 0, 0}, {'C', 1, 0, 0, 0},
                       {'D', 0.95, 0, 0.05, 0}, {'F', 0.5, 0, 0, 0.5}};
  const uint64_t n = 100000;
  for (const Mix& m : mixes) {
    auto s = YcsbStream::Create(Options(m.w, "zipfian", 10000), 0);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    std::map<YcsbOpKind, uint64_t> count;
    uint64_t next_insert = 10000;
    for (uint64_t i = 0; i < n; ++i) {
      const YcsbOp op = (*s)->Next();
      ++count[op.kind];
      if (op.kind == YcsbOpKind::kInsert) {
        EXPECT_EQ(op.keynum, next_insert++) << "inserts take fresh key numbers in order";
        (*s)->Acknowledge(op.keynum);
      } else {
        EXPECT_LT(op.keynum, next_insert) << "reads and updates only name loaded or acknowledged keys";
      }
    }
    const std::string w(1, m.w);
    ExpectShare(count[YcsbOpKind::kRead], n, m.read, w + " reads");
    ExpectShare(count[YcsbOpKind::kUpdate], n, m.update, w + " updates");
    ExpectShare(count[YcsbOpKind::kInsert], n, m.insert, w + " inserts");
    ExpectShare(count[YcsbOpKind::kReadModifyWrite], n, m.rmw, w + " read-modify-writes");
  }
}

// The scrambled Zipfian (theta 0.99): Zipf ranks over 10^10 items hashed
// onto the records.  Gray et al.'s construction (YCSB's) draws rank 0 with
// probability 1 / zeta(10^10, 0.99) = 1 / 26.469 and rank 1 with 0.5^0.99 /
// zeta exactly (further ranks follow an approximation of the power law);
// other ranks hashed onto the same record add about 1 / records of the rest,
// far below the tolerance.  So the two hottest records have those
// frequencies, and they are not the first key numbers.
TEST(YcsbWorkload, ZipfianHotKeysHaveTheFormulasFrequency) {
  const uint64_t records = 100000, n = 400000;
  auto s = YcsbStream::Create(Options('C', "zipfian", records), 7);
  ASSERT_TRUE(s.ok());
  std::unordered_map<uint64_t, uint64_t> freq;
  for (uint64_t i = 0; i < n; ++i) ++freq[(*s)->Next().keynum];
  std::vector<std::pair<uint64_t, uint64_t>> by_count;  // (count, keynum)
  for (const auto& [k, c] : freq) by_count.emplace_back(c, k);
  std::sort(by_count.rbegin(), by_count.rend());
  const double zeta = ycsb::ScrambledZipfianGenerator::kZetan;
  ExpectShare(by_count[0].first, n, 1 / zeta, "the hottest record (rank 0)");
  ExpectShare(by_count[1].first, n, std::pow(0.5, 0.99) / zeta, "the second hottest record (rank 1)");
  // The hottest 1% of the records carry about ranks 1..1000's mass,
  // sum_{r<=1000} r^-0.99 / zeta = 7.3 / 26.47 = 0.28 (uniform: 0.01); the
  // ranks past 10^5 spread evenly, so fewer distinct records are drawn than
  // the 98% four draws per record give uniformly.
  uint64_t top = 0;
  for (size_t i = 0; i < records / 100 && i < by_count.size(); ++i) top += by_count[i].first;
  EXPECT_GT(static_cast<double>(top) / n, 0.25);
  EXPECT_LT(static_cast<double>(top) / n, 0.35);
  EXPECT_LT(freq.size(), records * 95 / 100);
  // Hot records are scattered over the key numbers.
  EXPECT_GE(std::min(by_count[0].second, by_count[1].second), 100u);
}

// Uniform: each record with probability 1/records; the hottest of them is
// far below the Zipfian's and the distinct records drawn match the
// occupancy formula records * (1 - e^(-n/records)).
TEST(YcsbWorkload, UniformSpreadsOverAllRecords) {
  const uint64_t records = 10000, n = 100000;
  auto s = YcsbStream::Create(Options('A', "uniform", records), 3);
  ASSERT_TRUE(s.ok());
  std::unordered_map<uint64_t, uint64_t> freq;
  for (uint64_t i = 0; i < n; ++i) {
    const YcsbOp op = (*s)->Next();
    ASSERT_LT(op.keynum, records);
    ++freq[op.keynum];
  }
  uint64_t top = 0;
  for (const auto& [k, c] : freq) top = std::max(top, c);
  // Mean 10 per record; a Poisson(10) maximum over 10^4 records stays below 35.
  EXPECT_LT(top, 35u);
  const double expected_distinct = records * (1 - std::exp(-static_cast<double>(n) / records));
  EXPECT_NEAR(static_cast<double>(freq.size()), expected_distinct, 5 * std::sqrt(expected_distinct));
}

// D reads the latest inserts most: with 1% of the records inserted, a large
// share of reads names one of them.
TEST(YcsbWorkload, WorkloadDReadsRecentInserts) {
  const uint64_t records = 10000;
  auto s = YcsbStream::Create(Options('D', "uniform", records), 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->spec().request_distribution, ycsb::Distribution::kLatest);
  uint64_t reads = 0, recent = 0;
  for (int i = 0; i < 50000; ++i) {
    const YcsbOp op = (*s)->Next();
    if (op.kind == YcsbOpKind::kInsert) {
      (*s)->Acknowledge(op.keynum);
    } else {
      ++reads;
      if (op.keynum + 100 >= records) ++recent;  // the last 100 loaded or any inserted
    }
  }
  EXPECT_GT(recent, reads / 2);
}

TEST(YcsbWorkload, StreamsAreFixedBySeedAndDifferByClient) {
  auto a = YcsbStream::Create(Options('A', "zipfian"), 0);
  auto b = YcsbStream::Create(Options('A', "zipfian"), 0);
  auto c = YcsbStream::Create(Options('A', "zipfian"), 1);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  int same_as_other_client = 0;
  for (int i = 0; i < 1000; ++i) {
    const YcsbOp x = (*a)->Next(), y = (*b)->Next(), z = (*c)->Next();
    EXPECT_EQ(x.keynum, y.keynum);
    EXPECT_EQ(x.kind, y.kind);
    same_as_other_client += x.keynum == z.keynum && x.kind == z.kind;
  }
  EXPECT_LT(same_as_other_client, 200);
}

TEST(YcsbWorkload, KeysAndValuesHaveTheirSizesAndDiffer) {
  std::set<std::string> keys;
  for (uint64_t k = 0; k < 10000; ++k) {
    const std::string key = YcsbKey(k, 16);
    ASSERT_EQ(key.size(), 16u);
    keys.insert(key);
  }
  EXPECT_EQ(keys.size(), 10000u);
  EXPECT_EQ(YcsbKey(5, 24).size(), 24u);
  EXPECT_EQ(YcsbValue(5, 0, 40).size(), 40u);
  EXPECT_NE(YcsbValue(5, 0, 40), YcsbValue(5, 1, 40));
  EXPECT_NE(YcsbValue(5, 0, 40), YcsbValue(6, 0, 40));
}

TEST(YcsbWorkload, RejectsBadOptions) {
  EXPECT_EQ(YcsbStream::Create(Options('E', "zipfian"), 0).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(YcsbStream::Create(Options('A', "latest"), 0).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(YcsbStream::Create(Options('A', "zipfian", 0), 0).status().code(), Status::Code::kInvalidArgument);
  YcsbWorkloadOptions o = Options('A', "zipfian");
  o.key_bytes = 8;
  EXPECT_EQ(CheckYcsbWorkloadOptions(o).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace pulse::bench
