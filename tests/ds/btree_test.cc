// BTree against std::map: random inserts and erases, find / lower_bound / range aggregation / scan
// with a fixed seed; every read traversal runs offloaded, at the CPU node and as the dispatch
// engine decides (kModes).
#include "pulse/ds/btree.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "support/ds_cluster.h"
#include "ds/ops_tally.h"

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
  uint64_t ops = 0;
  const uint64_t n = ScaledOps(45000);
  for (uint64_t op = 0; op < n; ++op) {
    // Inserts outnumber erases in the first 60% of the run, erases in the
    // rest: the tree grows, then shrinks through borrows and merges.
    const int kind = static_cast<int>(rng() % 12);
    const bool shrinking = op > n * 6 / 10;
    if (op % (n / 5 + 1) == n / 5) {  // a whole-tree walk: five of them
      Status v = tree.Validate();
      ASSERT_TRUE(v.ok()) << "after op " << op << ": " << v.ToString();
    }
    if (kind >= 10 || (shrinking && kind < 4)) {
      ++ops;
      uint64_t key = rng() % kKeys;  // half the time a present key
      if ((kind == 10 || shrinking) && native.lower_bound(key) != native.end()) key = native.lower_bound(key)->first;
      auto r = tree.Erase(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.erase(key) == 1) << "erase " << key;
      ASSERT_EQ(tree.size(), native.size());
    } else if (kind < 6) {
      ++ops;
      const uint64_t key = rng() % kKeys, value = rng() % 1000000;
      auto r = tree.Insert(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.emplace(key, value).second) << "insert " << key;
      ASSERT_EQ(tree.size(), native.size());
    } else if (kind < 9) {
      const uint64_t key = rng() % (kKeys + 100);
      auto want = native.lower_bound(key);
      auto want_ub = native.upper_bound(key);
      for (ExecutionMode mode : kModes) {
        tree.set_mode(mode);
        ops += 3;
        auto ub = tree.UpperBound(key);
        ASSERT_TRUE(ub.ok()) << ub.status().ToString();
        ASSERT_EQ(ub->has_value(), want_ub != native.end()) << "upper_bound " << key;
        if (want_ub != native.end()) EXPECT_EQ(**ub, BTree::Entry(*want_ub)) << "upper_bound " << key;
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
        ++ops;
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
  EXPECT_GE(tree.height(), 2u);
  Status valid = tree.Validate();
  ASSERT_TRUE(valid.ok()) << valid.ToString();
  TallyOps("btree random", ops);
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
  // Erase whole leaves: they merge into their siblings.
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
  ASSERT_TRUE((*tree)->Validate().ok());
  auto ub = (*tree)->UpperBound(990);
  ASSERT_TRUE(ub.ok());
  ASSERT_TRUE(ub->has_value());
  EXPECT_EQ((*ub)->first, 3010u);
  auto none = (*tree)->UpperBound(UINT64_MAX);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// Erasing every key in random order shrinks the tree back to one leaf and
// keeps it valid at every step; the freed nodes are reused by new inserts.
TEST_F(DsBTree, EraseEverythingShrinksToALeaf) {
  auto created = BTree::Create(client_.get(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(created.ok());
  BTree& tree = **created;
  std::vector<uint64_t> keys(3000);
  for (uint64_t i = 0; i < keys.size(); ++i) keys[i] = i * 3;
  std::mt19937_64 rng(4);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (uint64_t k : keys) ASSERT_TRUE(tree.Insert(k, k + 1).ok());
  const uint32_t tall = tree.height();
  EXPECT_GE(tall, 3u);
  std::shuffle(keys.begin(), keys.end(), rng);
  std::set<uint64_t> left(keys.begin(), keys.end());
  uint64_t ops = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto e = tree.Erase(keys[i]);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_TRUE(*e);
    left.erase(keys[i]);
    ++ops;
    if (i % 100 == 0) {
      Status v = tree.Validate();
      ASSERT_TRUE(v.ok()) << "after " << i << " erases: " << v.ToString();
      const uint64_t probe = rng() % 9000;
      auto lb = tree.LowerBound(probe);
      ASSERT_TRUE(lb.ok());
      auto want = left.lower_bound(probe);
      ASSERT_EQ(lb->has_value(), want != left.end());
      if (want != left.end()) EXPECT_EQ((*lb)->first, *want);
      ++ops;
    }
  }
  EXPECT_EQ(tree.size(), 0u);
  EXPECT_EQ(tree.height(), 1u);
  ASSERT_TRUE(tree.Validate().ok());
  auto lb = tree.LowerBound(0);
  ASSERT_TRUE(lb.ok());
  EXPECT_FALSE(lb->has_value());
  for (uint64_t k = 0; k < 500; ++k) ASSERT_TRUE(tree.Insert(k, k).ok());
  ASSERT_TRUE(tree.Validate().ok());
  TallyOps("btree erase-all", ops + 500 + keys.size());
}

// Partitioned placement (000 C.2): with keys below the split on node 0 and
// the rest on node 1, a lookup's descent crosses memory nodes at most once
// (every node below a node-1 node is on node 1), offloaded or not.
TEST_F(DsBTree, PartitionedPlacementCrossesAtMostOnce) {
  ClientOptions options = RackClientOptions();
  options.policy = AllocationPolicy::kPartitioned;
  std::unique_ptr<Client> c = ConnectClient(options);
  ASSERT_NE(c, nullptr);
  Client& client = *c;
  constexpr uint64_t kKeys = 4000;
  auto created = BTree::Create(&client, {.partition = BTreePartition{kKeys / 2, 0, 1}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  BTree& tree = **created;
  std::vector<uint64_t> keys(kKeys);
  for (uint64_t i = 0; i < kKeys; ++i) keys[i] = i;
  std::mt19937_64 rng(8);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (uint64_t k : keys) ASSERT_TRUE(tree.Insert(k, k * 2 + 1).ok());
  EXPECT_EQ(client.NodeOf(tree.header_address()), 0u);
  uint64_t crossings = 0, ops = 0;
  tree.set_mode(ExecutionMode::kCpuNode);
  for (uint64_t i = 0; i < 400; ++i) {
    const uint64_t key = rng() % kKeys;
    const uint64_t before = client.counters().node_crossings;
    auto f = tree.Find(key);
    ASSERT_TRUE(f.ok());
    ASSERT_EQ(*f, std::optional<uint64_t>(key * 2 + 1));
    const uint64_t crossed = client.counters().node_crossings - before;
    EXPECT_LE(crossed, 1u) << "key " << key;
    crossings += crossed;
    ++ops;
  }
  EXPECT_GT(crossings, 0u) << "half the keys are on node 1";
  // Offloaded: at most one continuation per lookup.
  const uint64_t forwards0 = rack_.Continuations();
  tree.set_mode(ExecutionMode::kOffload);
  constexpr uint64_t kOffloaded = 200;
  for (uint64_t i = 0; i < kOffloaded; ++i) {
    const uint64_t key = rng() % kKeys;
    auto f = tree.Find(key);
    ASSERT_TRUE(f.ok());
    ASSERT_EQ(*f, std::optional<uint64_t>(key * 2 + 1));
    ++ops;
  }
  const uint64_t forwards = rack_.Continuations() - forwards0;
  EXPECT_LE(forwards, kOffloaded);
  EXPECT_GT(forwards, 0u);
  // A partition naming a node that does not exist is refused.
  auto bad = BTree::Create(&client, {.partition = BTreePartition{10, 0, 7}});
  EXPECT_FALSE(bad.ok());
  TallyOps("btree partitioned", ops + kKeys);
}

}  // namespace
}  // namespace pulse::ds::testing
