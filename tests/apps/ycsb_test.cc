// The YCSB generator against the distributions it must produce (fixed seeds,
// large samples, tolerances derived from the distributions) and the trace
// reader against YCSB's BasicDB output and malformed lines.
#include "pulse/apps/ycsb.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

namespace pulse::apps::ycsb {
namespace {

// FNV-1 64 written over the byte representation (little-endian), then
// Java's Math.abs: an independent statement of YCSB's Utils.fnvhash64.
uint64_t ReferenceFnv(uint64_t v) {
  unsigned char bytes[8];
  std::memcpy(bytes, &v, 8);
  uint64_t h = 14695981039346656037ull;
  for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ull;
  const int64_t s = static_cast<int64_t>(h);
  return s < 0 && s != INT64_MIN ? static_cast<uint64_t>(-s) : h;
}

TEST(Ycsb, FnvHashMatchesReferenceAndIsNonNegative) {
  Random r(1);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = i < 100 ? static_cast<uint64_t>(i) : r.NextU64();
    EXPECT_EQ(FnvHash64(v), ReferenceFnv(v)) << v;
    EXPECT_LT(FnvHash64(v), uint64_t{1} << 63) << v;
  }
}

TEST(Ycsb, ZipfianRankFrequencySlopeAndTopShare) {
  constexpr uint64_t kItems = 1000, kSamples = 2'000'000;
  ZipfianGenerator z(0, kItems - 1);
  Random r(7);
  std::vector<uint64_t> freq(kItems, 0);
  for (uint64_t i = 0; i < kSamples; ++i) {
    const uint64_t v = z.Next(r);
    ASSERT_LT(v, kItems);
    ++freq[v];
  }
  // P(item 0) = 1 / zeta(n, theta) by construction of the method.
  const double top = static_cast<double>(freq[0]) / kSamples;
  EXPECT_NEAR(top, 1.0 / ZipfianGenerator::Zeta(kItems, 0.99), 0.002);
  EXPECT_NEAR(z.zetan(), ZipfianGenerator::Zeta(kItems, 0.99), 1e-9);
  // Least-squares slope of log(frequency) over log(rank) for ranks 1..100: -theta.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const int n = 100;
  for (int k = 0; k < n; ++k) {
    ASSERT_GT(freq[k], 0u);
    const double x = std::log(k + 1.0), y = std::log(static_cast<double>(freq[k]));
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  EXPECT_NEAR(slope, -0.99, 0.06);
  // Popularity falls with rank.
  EXPECT_GT(freq[0], freq[1]);
  EXPECT_GT(freq[1], freq[10]);
  EXPECT_GT(freq[10], freq[500]);
}

TEST(Ycsb, ZipfianExtendsZetaWhenItemsGrow) {
  ZipfianGenerator z(0, 99);
  Random r(3);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(z.NextLong(r, 500), 500u);
  EXPECT_NEAR(z.zetan(), ZipfianGenerator::Zeta(500, 0.99), 1e-9);
  z.NextLong(r, 200);  // shrinking recomputes
  EXPECT_NEAR(z.zetan(), ZipfianGenerator::Zeta(200, 0.99), 1e-9);
}

TEST(Ycsb, ScrambledZipfianSpreadsHotItemsWithYcsbShare) {
  constexpr uint64_t kItems = 1000, kSamples = 1'000'000;
  ScrambledZipfianGenerator z(0, kItems - 1);
  Random r(11);
  std::vector<uint64_t> freq(kItems, 0);
  for (uint64_t i = 0; i < kSamples; ++i) {
    const uint64_t v = z.Next(r);
    ASSERT_LT(v, kItems);
    ++freq[v];
  }
  const auto hottest = std::max_element(freq.begin(), freq.end()) - freq.begin();
  // The hottest bucket holds Zipfian item 0 (share 1/zeta(10^10)) plus its
  // share of the spread-out tail (< 0.1 %).
  EXPECT_EQ(static_cast<uint64_t>(hottest), FnvHash64(0) % kItems);
  EXPECT_NEAR(static_cast<double>(freq[hottest]) / kSamples, 1 / ScrambledZipfianGenerator::kZetan, 0.004);
  // Skewed: the 10 hottest buckets take far more than 1 % of the samples.
  std::vector<uint64_t> sorted = freq;
  std::sort(sorted.rbegin(), sorted.rend());
  uint64_t top10 = 0;
  for (int i = 0; i < 10; ++i) top10 += sorted[i];
  EXPECT_GT(static_cast<double>(top10) / kSamples, 0.10);
}

TEST(Ycsb, UniformPassesChiSquare) {
  constexpr uint64_t kBins = 100, kSamples = 1'000'000;
  UniformGenerator u(1000, 1000 + kBins - 1);
  Random r(5);
  std::vector<uint64_t> freq(kBins, 0);
  for (uint64_t i = 0; i < kSamples; ++i) {
    const uint64_t v = u.Next(r);
    ASSERT_GE(v, 1000u);
    ASSERT_LT(v, 1000 + kBins);
    ++freq[v - 1000];
  }
  const double expected = static_cast<double>(kSamples) / kBins;
  double chi2 = 0;
  for (uint64_t f : freq) chi2 += (f - expected) * (f - expected) / expected;
  // 99 degrees of freedom: the 99.9th percentile is about 148.
  EXPECT_LT(chi2, 148.2);
}

TEST(Ycsb, AcknowledgedCounterAdvancesOverContiguousAcks) {
  AcknowledgedCounterGenerator c(10);
  EXPECT_EQ(c.Last(), 9u);
  const uint64_t a = c.Next(), b = c.Next(), d = c.Next();
  c.Acknowledge(d);
  EXPECT_EQ(c.Last(), 9u);
  c.Acknowledge(a);
  EXPECT_EQ(c.Last(), a);
  c.Acknowledge(b);
  EXPECT_EQ(c.Last(), d);
}

TEST(Ycsb, LatestFavoursRecentInserts) {
  AcknowledgedCounterGenerator c(1000);
  SkewedLatestGenerator latest(&c);
  Random r(9);
  auto recent_share = [&](uint64_t window) {
    uint64_t recent = 0, n = 100000;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t v = latest.Next(r);
      EXPECT_LE(v, c.Last());
      if (v + window > c.Last()) ++recent;
    }
    return static_cast<double>(recent) / n;
  };
  // With 1000 items, the newest 10 keys carry zeta(10)/zeta(1000) ~ 39 %.
  EXPECT_NEAR(recent_share(10), ZipfianGenerator::Zeta(10, 0.99) / ZipfianGenerator::Zeta(1000, 0.99), 0.03);
  for (int i = 0; i < 500; ++i) c.Acknowledge(c.Next());
  EXPECT_EQ(c.Last(), 1499u);
  // The favoured keys moved to the new inserts.
  EXPECT_GT(recent_share(10), 0.3);
}

std::map<Op, double> Mix(char letter, uint64_t n) {
  auto spec = CoreWorkload(letter, 10000, n);
  EXPECT_TRUE(spec.ok());
  auto w = Workload::Create(*spec, 123);
  EXPECT_TRUE(w.ok());
  std::map<Op, double> m;
  for (uint64_t i = 0; i < n; ++i) {
    const Operation op = (*w)->Next();
    m[op.op] += 1.0 / n;
    EXPECT_EQ(op.key, FnvHash64(op.keynum));
    if (op.op == Op::kInsert) (*w)->Acknowledge(op.keynum);
  }
  return m;
}

TEST(Ycsb, CoreWorkloadOperationMixes) {
  constexpr uint64_t n = 200000;  // binomial sd <= 0.0012
  auto a = Mix('A', n);
  EXPECT_NEAR(a[Op::kRead], 0.5, 0.006);
  EXPECT_NEAR(a[Op::kUpdate], 0.5, 0.006);
  auto b = Mix('b', n);
  EXPECT_NEAR(b[Op::kRead], 0.95, 0.006);
  EXPECT_NEAR(b[Op::kUpdate], 0.05, 0.006);
  EXPECT_NEAR(Mix('C', n)[Op::kRead], 1.0, 1e-9);
  auto d = Mix('D', n);
  EXPECT_NEAR(d[Op::kInsert], 0.05, 0.006);
  auto e = Mix('E', n);
  EXPECT_NEAR(e[Op::kScan], 0.95, 0.006);
  auto f = Mix('F', n);
  EXPECT_NEAR(f[Op::kReadModifyWrite], 0.5, 0.006);
  EXPECT_FALSE(CoreWorkload('G', 1, 1).ok());
}

TEST(Ycsb, InsertsAreFreshAndScanLengthsUniform) {
  auto spec = CoreWorkload('E', 5000, 100000);
  ASSERT_TRUE(spec.ok());
  auto w = Workload::Create(*spec, 77);
  ASSERT_TRUE(w.ok());
  uint64_t next_insert = 5000, scans = 0;
  double length_sum = 0;
  std::vector<uint64_t> lengths(101, 0);
  for (int i = 0; i < 100000; ++i) {
    const Operation op = (*w)->Next();
    if (op.op == Op::kInsert) {
      EXPECT_EQ(op.keynum, next_insert++);
      (*w)->Acknowledge(op.keynum);
    } else {
      ASSERT_EQ(op.op, Op::kScan);
      EXPECT_LT(op.keynum, next_insert);  // never a key not yet inserted
      ASSERT_GE(op.scan_length, 1u);
      ASSERT_LE(op.scan_length, 100u);
      ++lengths[op.scan_length];
      length_sum += op.scan_length;
      ++scans;
    }
  }
  EXPECT_NEAR(length_sum / scans, 50.5, 0.5);
  EXPECT_GT(lengths[1], 0u);
  EXPECT_GT(lengths[100], 0u);
}

TEST(Ycsb, UniformRequestsStayInLoadedKeys) {
  auto spec = CoreWorkload('A', 1000, 1000);
  ASSERT_TRUE(spec.ok());
  spec->request_distribution = Distribution::kUniform;
  auto w = Workload::Create(*spec, 1);
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 10000; ++i) EXPECT_LT((*w)->Next().keynum, 1000u);
}

TEST(Ycsb, RejectsBadSpecs) {
  WorkloadSpec s;
  EXPECT_FALSE(Workload::Create(s, 1).ok());  // all proportions 0
  s.read = 1;
  s.record_count = 0;
  EXPECT_FALSE(Workload::Create(s, 1).ok());
  s.record_count = 10;
  s.min_scan_length = 5;
  s.max_scan_length = 4;
  EXPECT_FALSE(Workload::Create(s, 1).ok());
}

TEST(YcsbTrace, ParsesBasicDbLines) {
  bool skipped = false;
  auto r = ParseTraceLine("READ usertable user6284781860667377211 [ <all fields>]", 1, &skipped);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(skipped);
  EXPECT_EQ(r->op, Op::kRead);
  EXPECT_EQ(r->key, 6284781860667377211ull);
  r = ParseTraceLine("UPDATE usertable user12 [ field1=a]b c ]", 2, &skipped);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->op, Op::kUpdate);
  EXPECT_EQ(r->key, 12u);
  r = ParseTraceLine("SCAN usertable user5 37 [ <all fields>]", 3, &skipped);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->op, Op::kScan);
  EXPECT_EQ(r->scan_length, 37u);
  r = ParseTraceLine("DELETE usertable user9", 4, &skipped);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->op, Op::kDelete);
  r = ParseTraceLine("INSERT usertable user1 [ field0=xyz ]", 5, &skipped);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->op, Op::kInsert);
  for (const char* line : {"", "   ", "# comment", "Loading workload...", "Starting test.",
                           "[OVERALL], RunTime(ms), 1234", "DBWrapper: report latency for each error is false"}) {
    r = ParseTraceLine(line, 6, &skipped);
    ASSERT_TRUE(r.ok()) << line;
    EXPECT_TRUE(skipped) << line;
  }
}

TEST(YcsbTrace, MalformedLinesNameLineAndField) {
  bool skipped = false;
  struct Case {
    const char* line;
    const char* expect;
  } cases[] = {
      {"FETCH usertable user1", "unknown operation 'FETCH'"},
      {"READ", "missing table"},
      {"READ usertable", "missing key"},
      {"READ usertable bob7", "key 'bob7' does not start with 'user'"},
      {"READ usertable user12x", "key number '12x'"},
      {"READ usertable user99999999999999999999", "key number"},
      {"SCAN usertable user1", "SCAN without a record count"},
      {"SCAN usertable user1 many", "SCAN record count 'many'"},
      {"SCAN usertable user1 0 [ ]", "out of range"},
      {"READ usertable user1 extra", "unexpected 'extra'"},
  };
  for (const Case& c : cases) {
    auto r = ParseTraceLine(c.line, 42, &skipped);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_NE(r.status().message().find("line 42"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().ToString();
  }
}

TEST(YcsbTrace, ReadsFileAndReportsPathAndLine) {
  const std::string path = ::testing::TempDir() + "/ycsb_trace_" + std::to_string(getpid()) + ".txt";
  {
    std::ofstream out(path);
    out << "YCSB Client 0.17.0\nLoading workload...\nStarting test.\n"
        << "READ usertable user1 [ <all fields>]\nUPDATE usertable user2 [ field0=v ]\n"
        << "SCAN usertable user3 10 [ <all fields>]\n[OVERALL], Throughput(ops/sec), 1.0\n";
  }
  auto ops = ReadTrace(path);
  ASSERT_TRUE(ops.ok()) << ops.status().ToString();
  ASSERT_EQ(ops->size(), 3u);
  EXPECT_EQ((*ops)[2].scan_length, 10u);
  {
    std::ofstream out(path);
    out << "READ usertable user1\nREAD usertable userX\n";
  }
  ops = ReadTrace(path);
  ASSERT_FALSE(ops.ok());
  EXPECT_NE(ops.status().message().find(path), std::string::npos);
  EXPECT_NE(ops.status().message().find("line 2"), std::string::npos);
  std::remove(path.c_str());
  EXPECT_EQ(ReadTrace(path).status().code(), Status::Code::kIoError);
}

}  // namespace
}  // namespace pulse::apps::ycsb
