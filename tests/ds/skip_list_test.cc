// SkipList against std::map: random insert / erase / find / lower_bound / upper_bound /
// aggregate / seek and iteration with a fixed seed; every read traversal runs offloaded, at the
// CPU node and as the dispatch engine decides (kModes).
#include "pulse/ds/skip_list.h"

#include <map>
#include <random>
#include <vector>

#include "support/ds_cluster.h"
#include "ds/lists_test_util.h"

namespace pulse::ds::testing {
namespace {

using DsSkipList = DsCluster;
using Entry = SkipList::Entry;

std::optional<Entry> EntryAt(const std::map<uint64_t, uint64_t>& m,
                             std::map<uint64_t, uint64_t>::const_iterator it) {
  if (it == m.end()) return std::nullopt;
  return Entry{it->first, it->second};
}

TEST_F(DsSkipList, RandomOperationsMatchStdMap) {
  auto created = SkipList::Create(client_.get());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  SkipList& list = **created;
  std::map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(41);
  // Keys spread over a wide range so lower/upper bounds land between keys.
  auto random_key = [&rng] { return (rng() % 2500) * 1000 + (rng() % 2 ? 0 : rng() % 1000); };
  uint64_t hits = 0;
  const uint64_t ops = ScaledOps(3000);
  for (uint64_t op = 0; op < ops; ++op) {
    const uint64_t key = random_key(), value = rng();
    const int kind = static_cast<int>(rng() % 20);
    if (kind < 6) {
      auto r = list.Insert(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, native.emplace(key, value).second) << "insert " << key;
    } else if (kind < 8) {
      // Erase a present key most of the time.
      auto it = native.lower_bound(key);
      const uint64_t victim = it != native.end() && rng() % 4 ? it->first : key;
      auto r = list.Erase(victim);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, native.erase(victim) == 1) << "erase " << victim;
    } else if (kind < 18) {
      const auto lb = EntryAt(native, native.lower_bound(key));
      const auto ub = EntryAt(native, native.upper_bound(key));
      const auto exact = native.find(key);
      for (ExecutionMode mode : kModes) {
        list.set_mode(mode);
        if (kind < 12) {
          auto r = list.LowerBound(key);
          ASSERT_TRUE(r.ok()) << r.status().ToString();
          ASSERT_EQ(*r, lb) << "lower_bound " << key;
        } else if (kind < 15) {
          auto r = list.UpperBound(key);
          ASSERT_TRUE(r.ok()) << r.status().ToString();
          ASSERT_EQ(*r, ub) << "upper_bound " << key;
        } else {
          // Find a present key half of the time.
          const uint64_t k = lb && kind == 15 ? lb->first : key;
          auto it = native.find(k);
          auto r = list.Find(k);
          ASSERT_TRUE(r.ok()) << r.status().ToString();
          ASSERT_EQ(*r, it == native.end() ? std::nullopt : std::optional<uint64_t>(it->second))
              << "find " << k;
          hits += it != native.end();
        }
        ++OpsCounted();
      }
      (void)exact;
    } else if (kind < 19) {
      const uint64_t lo = random_key(), hi = lo + rng() % 200000;
      const Aggregate want = ReferenceAggregate(
          native, lo, hi, [](const auto& e) { return e.first; },
          [](const auto& e) { return e.second; });
      for (ExecutionMode mode : kModes) {
        list.set_mode(mode);
        auto r = list.AggregateRange(lo, hi);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(*r, want) << "aggregate [" << lo << ", " << hi << "]";
        ++OpsCounted();
      }
    } else {  // seek and a few steps of range iteration
      auto it = list.Seek(key);
      ASSERT_TRUE(it.ok()) << it.status().ToString();
      auto nit = native.lower_bound(key);
      for (int step = 0; step < 5; ++step, ++nit) {
        ASSERT_EQ(it->done(), nit == native.end());
        if (nit == native.end()) break;
        ASSERT_EQ(Entry(it->key(), it->value()), Entry(nit->first, nit->second));
        ASSERT_TRUE(it->Next().ok());
      }
    }
    ++OpsCounted();
    ASSERT_EQ(list.size(), native.size());
  }
  if (ops >= 1000) {
    EXPECT_GT(hits, ops / 100) << "the mix should find present keys";
  }
  EXPECT_GT(list.levels(), 1u);
  auto all = list.ToVector();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, std::vector<Entry>(native.begin(), native.end()));
  ExpectBothPathsUsed();
}

TEST_F(DsSkipList, EmptyAndExtremeKeys) {
  EXPECT_EQ(SkipList::Create(nullptr).status().code(), Status::Code::kInvalidArgument);
  auto created = SkipList::Create(client_.get(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(created.ok());
  SkipList& list = **created;
  auto none = list.LowerBound(0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto agg = list.AggregateRange();
  ASSERT_TRUE(agg.ok());
  EXPECT_EQ(*agg, Aggregate{});
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  for (uint64_t k : {max, uint64_t{0}, uint64_t{1}, max - 1}) {
    auto r = list.Insert(k, k ^ 5);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(*r);
  }
  auto dup = list.Insert(0, 9);
  ASSERT_TRUE(dup.ok());
  EXPECT_FALSE(*dup);
  auto lb = list.LowerBound(2);
  ASSERT_TRUE(lb.ok());
  EXPECT_EQ(*lb, std::optional<Entry>(Entry{max - 1, (max - 1) ^ 5}));
  auto ub = list.UpperBound(max);
  ASSERT_TRUE(ub.ok());
  EXPECT_FALSE(ub->has_value());
  auto f0 = list.Find(0);
  ASSERT_TRUE(f0.ok());
  EXPECT_EQ(*f0, std::optional<uint64_t>(5));
  auto all = list.AggregateRange(0, max);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->count, 4u);
  EXPECT_EQ(all->min, 4u);  // 1 ^ 5
  for (uint64_t k : {uint64_t{0}, max, uint64_t{1}, max - 1}) {
    auto e = list.Erase(k);
    ASSERT_TRUE(e.ok());
    EXPECT_TRUE(*e);
  }
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.levels(), 1u);
}

}  // namespace
}  // namespace pulse::ds::testing
