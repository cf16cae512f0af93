// BTree against std::map: random inserts and erases, find / lower_bound / range aggregation / scan
// with a fixed seed; every read traversal runs offloaded, at the CPU node and as the dispatch
// engine decides (kModes).
#include "pulse/ds/btree.h"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "ds/ds_cluster.h"

namespace pulse::ds::testing {
namespace {

using DsBTree = DsCluster;

Aggregate NativeAggregate(const std::map<uint64_t, uint64_t>& m, uint64_t lo, uint64_t hi) {
  Aggregate a;
  for (auto it = m.lower_bound(lo); it != m.end() && it->first <= hi; ++it) {
    a.sum += it->second;
    a.min = std::min(a.min, it->second);
    a.max = std::max(a.max, it->second);
    ++a.count;
  }
  return a;
}

TEST_F(DsBTree, RandomOperationsMatchStdMap) {
  auto created = BTree::Create(client_.get());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  BTree& tree = **created;
  std::map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(23);
  constexpr uint64_t kKeys = 20000;
  for (uint64_t op = 0; op < ScaledOps(5000); ++op) {
    const int kind = static_cast<int>(rng() % 12);
    if (kind >= 10) {
      uint64_t key = rng() % kKeys;  // half the time a present key
      if (kind == 10 && native.lower_bound(key) != native.end()) key = native.lower_bound(key)->first;
      auto r = tree.Erase(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.erase(key) == 1) << "erase " << key;
      ASSERT_EQ(tree.size(), native.size());
    } else if (kind < 6) {
      const uint64_t key = rng() % kKeys, value = rng() % 1000000;
      auto r = tree.Insert(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.emplace(key, value).second) << "insert " << key;
      ASSERT_EQ(tree.size(), native.size());
    } else if (kind < 9) {
      const uint64_t key = rng() % (kKeys + 100);
      auto want = native.lower_bound(key);
      for (ExecutionMode mode : kModes) {
        tree.set_mode(mode);
        auto lb = tree.LowerBound(key);
        ASSERT_TRUE(lb.ok()) << lb.status().ToString();
        ASSERT_EQ(lb->has_value(), want != native.end()) << "lower_bound " << key;
        if (want != native.end()) {
          EXPECT_EQ((*lb)->first, want->first) << "lower_bound " << key;
          EXPECT_EQ((*lb)->second, want->second);
        }
        auto f = tree.Find(key);
        ASSERT_TRUE(f.ok()) << f.status().ToString();
        auto it = native.find(key);
        ASSERT_EQ(f->has_value(), it != native.end()) << "find " << key;
        if (it != native.end()) {
          EXPECT_EQ(**f, it->second);
        }
      }
    } else {
      uint64_t lo = rng() % (kKeys + 100), hi = lo + rng() % 2000;
      const Aggregate want = NativeAggregate(native, lo, hi);
      for (ExecutionMode mode : kModes) {
        tree.set_mode(mode);
        auto r = tree.AggregateRange(lo, hi);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_EQ(*r, want) << "aggregate [" << lo << ", " << hi << "] count " << r->count
                            << " want " << want.count;
      }
      auto s = tree.Scan(lo, hi);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      std::vector<BTree::Entry> ws(native.lower_bound(lo), native.upper_bound(hi));
      EXPECT_EQ(*s, ws);
    }
  }
  EXPECT_GE(tree.height(), 3u);
  // The whole tree, in order, by a scan and by one aggregation per path.
  auto all = tree.Scan(0, UINT64_MAX);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, std::vector<BTree::Entry>(native.begin(), native.end()));
  for (ExecutionMode mode : kModes) {
    tree.set_mode(mode);
    auto a = tree.AggregateRange(0, UINT64_MAX);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, NativeAggregate(native, 0, UINT64_MAX));
  }
  ExpectBothPathsUsed();
}

TEST_F(DsBTree, SequentialInsertsAndEdgeKeys) {
  auto tree = BTree::Create(client_.get(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(tree.ok());
  auto empty = (*tree)->LowerBound(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value());
  for (uint64_t k = 1; k <= 600; ++k) ASSERT_TRUE((*tree)->Insert(k * 10, k).ok());
  ASSERT_TRUE((*tree)->Insert(UINT64_MAX, 7).ok());
  EXPECT_EQ((*tree)->size(), 601u);
  auto dup = (*tree)->Insert(100, 999);
  ASSERT_TRUE(dup.ok());
  EXPECT_FALSE(*dup);
  for (uint64_t k = 0; k <= 6010; k += 7) {
    auto lb = (*tree)->LowerBound(k);
    ASSERT_TRUE(lb.ok()) << lb.status().ToString();
    ASSERT_TRUE(lb->has_value());
    const uint64_t want = k > 6000 ? UINT64_MAX : std::max<uint64_t>(10, (k + 9) / 10 * 10);
    EXPECT_EQ((*lb)->first, want) << k;
  }
  auto top = (*tree)->Find(UINT64_MAX);
  ASSERT_TRUE(top.ok());
  ASSERT_TRUE(top->has_value());
  EXPECT_EQ(**top, 7u);
  auto a = (*tree)->AggregateRange(15, 45);  // 20, 30, 40 -> values 2, 3, 4
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (Aggregate{9, 2, 4, 3}));
  // Erase whole leaves: traversals step over the emptied ones.
  for (uint64_t k = 100; k <= 300; ++k) {
    auto e = (*tree)->Erase(k * 10);
    ASSERT_TRUE(e.ok());
    EXPECT_TRUE(*e);
  }
  auto gone = (*tree)->Erase(1000);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(*gone);
  EXPECT_EQ((*tree)->size(), 400u);
  for (ExecutionMode mode : kModes) {
    (*tree)->set_mode(mode);
    auto lb = (*tree)->LowerBound(995);
    ASSERT_TRUE(lb.ok()) << lb.status().ToString();
    ASSERT_TRUE(lb->has_value());
    EXPECT_EQ((*lb)->first, 3010u);
    auto agg = (*tree)->AggregateRange(990, 3020);  // 990 and 3010, 3020 -> 99 + 301 + 302
    ASSERT_TRUE(agg.ok());
    EXPECT_EQ(*agg, (Aggregate{702, 99, 302, 3}));
  }
  auto scan = (*tree)->Scan(990, 3020);
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(*scan, (std::vector<BTree::Entry>{{990, 99}, {3010, 301}, {3020, 302}}));
}

}  // namespace
}  // namespace pulse::ds::testing
