// BTree inserts with the leaf split near memory (src/ds/btree_offload.h,
// src/ds/iterators/ds_btree_insert.c) against std::map: random, ascending
// and descending keys with many splits, mixed with BTree::Erase and the
// CPU node's Insert, with right, stale and no leaf hints.  After each run the
// tree is checked whole (Repair recounts the size the traversal does not
// keep; Validate checks every B+tree invariant and the leaf chain) and read
// back by Find, LowerBound, Scan and AggregateRange.
#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "ds/btree_offload.h"
#include "pulse/ds/btree.h"
#include "support/ds_cluster.h"

namespace pulse::ds::testing {
namespace {

using DsBTreeOffload = DsCluster;
using internal::InsertNearMemory;
using internal::OffloadInsertStats;
using internal::SpareNodes;

std::unique_ptr<BTree> OffloadedTree(Client* client) {
  BTreeOptions options;
  options.mode = ExecutionMode::kOffload;
  auto created = BTree::Create(client, options);
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  return created.ok() ? std::move(*created) : nullptr;
}

// The whole tree against the reference.
void ExpectSame(BTree& tree, const std::map<uint64_t, uint64_t>& native, std::mt19937_64& rng) {
  ASSERT_TRUE(tree.Repair().ok());
  Status v = tree.Validate();
  ASSERT_TRUE(v.ok()) << v.ToString();
  EXPECT_EQ(tree.size(), native.size());
  auto all = tree.Scan(0, UINT64_MAX);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  const std::vector<BTree::Entry> want(native.begin(), native.end());
  EXPECT_TRUE(*all == want) << "scan differs";
  for (int probe = 0; probe < 200; ++probe) {
    const uint64_t key = native.empty() || probe % 2 ? rng() : std::next(native.begin(), rng() % native.size())->first;
    auto lb = tree.LowerBound(key);
    ASSERT_TRUE(lb.ok()) << lb.status().ToString();
    auto it = native.lower_bound(key);
    ASSERT_EQ(lb->has_value(), it != native.end()) << "lower_bound " << key;
    if (it != native.end()) EXPECT_EQ(**lb, BTree::Entry(it->first, it->second)) << "lower_bound " << key;
    uint64_t lo = rng(), hi = rng();
    if (lo > hi) std::swap(lo, hi);
    auto agg = tree.AggregateRange(lo, hi);
    ASSERT_TRUE(agg.ok()) << agg.status().ToString();
    uint64_t count = 0, sum = 0;
    for (auto i = native.lower_bound(lo); i != native.end() && i->first <= hi; ++i) ++count, sum += i->second;
    EXPECT_EQ(agg->count, count);
    EXPECT_EQ(agg->sum, sum);
  }
}

TEST_F(DsBTreeOffload, RandomInsertsMatchStdMap) {
  auto tree = OffloadedTree(client_.get());
  ASSERT_NE(tree, nullptr);
  SpareNodes spares(client_.get());
  std::map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(18);
  OffloadInsertStats stats;
  const uint64_t n = ScaledOps(6000);
  for (uint64_t op = 0; op < n; ++op) {
    // Keys from a range of 2n: a quarter of the inserts find the key there.
    const uint64_t key = rng() % (2 * n) * 0x9e3779b97f4a7c15ull, value = rng();
    auto r = InsertNearMemory(client_.get(), *tree, spares, key, value, 0, &stats);
    ASSERT_TRUE(r.ok()) << "op " << op << ": " << r.status().ToString();
    ASSERT_EQ(*r, native.emplace(key, value).second) << "insert " << key;
    if (op % 500 == 0) {
      auto f = tree->Find(key);
      ASSERT_TRUE(f.ok() && f->has_value()) << "find " << key;
      EXPECT_EQ(**f, native.at(key));
    }
  }
  ExpectSame(*tree, native, rng);
  // Most splits were done near memory; the rest (full parents, the root)
  // by BTree::Insert.
  EXPECT_GT(stats.splits, native.size() / 30) << stats.in_place << " in place, " << stats.at_cpu << " at the CPU";
  EXPECT_GT(stats.at_cpu, 0u);
  EXPECT_GT(stats.in_place, stats.splits);
}

TEST_F(DsBTreeOffload, AscendingAndDescendingKeys) {
  for (bool ascending : {true, false}) {
    auto tree = OffloadedTree(client_.get());
    ASSERT_NE(tree, nullptr);
    SpareNodes spares(client_.get());
    std::map<uint64_t, uint64_t> native;
    std::mt19937_64 rng(ascending ? 1 : 2);
    OffloadInsertStats stats;
    const uint64_t n = ScaledOps(3000);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t key = ascending ? 10 * i + 5 : 10 * (n - i) + 5;
      auto r = InsertNearMemory(client_.get(), *tree, spares, key, key * 3, 0, &stats);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_TRUE(*r);
      native.emplace(key, key * 3);
    }
    ExpectSame(*tree, native, rng);
    EXPECT_GT(stats.splits, 0u);
  }
}

// A split started at the full leaf itself with its parent given (what the
// keyspace does with the leaf and parent a lookup found): a first traversal
// without a spare learns them, a second from the leaf splits it.
TEST_F(DsBTreeOffload, SplitsStartedAtTheLeaf) {
  auto tree = OffloadedTree(client_.get());
  ASSERT_NE(tree, nullptr);
  auto program = internal::BTreeInsertProgram();
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  SpareNodes spares(client_.get());
  std::map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(29);
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  auto run = [&](uint64_t start, uint64_t key, uint64_t spare, uint64_t parent) {
    auto r = client_->Traverse(*program, start, internal::BTreeInsertScratch(*program, key, 7, spare, parent), offload);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    auto st = internal::BTreeInsertState(*r);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    return *st;
  };
  uint64_t splits = 0;
  const uint64_t n = ScaledOps(3000);
  for (uint64_t op = 0; op < n; ++op) {
    const uint64_t key = rng() % (4 * n) * 0x9e3779b97f4a7c15ull;
    const bool absent = native.emplace(key, 7).second;
    pulse_ds_btree_insert_state st = run(tree->root(), key, 0, 0);
    if (st.result == PULSE_DS_BTREE_INS_DECLINED && st.parent != 0 && st.parent_count < PULSE_DS_BTREE_MAX_KEYS) {
      auto spare = spares.Take(*client_->NodeOf(st.leaf));
      ASSERT_TRUE(spare.ok() && *spare != 0);
      st = run(st.leaf, key, *spare, st.parent);
      ASSERT_EQ(st.result, uint64_t{PULSE_DS_BTREE_INS_SPLIT}) << "op " << op;
      ++splits;
    } else if (st.result == PULSE_DS_BTREE_INS_DECLINED) {
      auto r = tree->Insert(key, 7);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_TRUE(*r);
    } else {
      ASSERT_EQ(st.result, static_cast<uint64_t>(absent ? PULSE_DS_BTREE_INS_INSERTED : PULSE_DS_BTREE_INS_PRESENT)) << "op " << op;
    }
    if (op % 200 == 0) ASSERT_TRUE(tree->Repair().ok());  // BTree::Insert counts from a right size
  }
  ExpectSame(*tree, native, rng);
  EXPECT_GT(splits, native.size() / 30);
}

// Offloaded inserts, CPU-node inserts and erases on one tree; leaf hints
// that are right (from a first offloaded insert's path), stale or absent.
TEST_F(DsBTreeOffload, MixedWithEraseAndCpuInserts) {
  auto tree = OffloadedTree(client_.get());
  ASSERT_NE(tree, nullptr);
  std::map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(7);
  OffloadInsertStats stats;
  const uint64_t n = ScaledOps(3000);
  std::vector<uint64_t> hints{0};
  bool uncounted = false;  // offloaded inserts since the last Repair
  {
    SpareNodes spares(client_.get());
    for (uint64_t op = 0; op < n; ++op) {
      const uint64_t key = rng() % 1500, value = rng() % 1000;
      const int kind = static_cast<int>(rng() % 10);
      if (kind < 6) {
        const uint64_t hint = hints[rng() % hints.size()];
        auto r = InsertNearMemory(client_.get(), *tree, spares, key, value, hint, &stats);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(*r, native.emplace(key, value).second) << "insert " << key;
        uncounted = uncounted || *r;
        if (hints.size() < 64) hints.push_back(tree->root());  // an inner node, or a stale leaf: wrong either way
      } else if (kind < 8) {
        // BTree::Insert after offloaded inserts: its size is off by them, so
        // repair first (what a writer of both kinds must do).
        if (std::exchange(uncounted, false)) ASSERT_TRUE(tree->Repair().ok());
        auto r = tree->Insert(key, value);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(*r, native.emplace(key, value).second) << "cpu insert " << key;
      } else {
        if (std::exchange(uncounted, false)) ASSERT_TRUE(tree->Repair().ok());
        auto r = tree->Erase(key);
        ASSERT_TRUE(r.ok()) << "erase " << key << ": " << r.status().ToString();  // frees spares it emptied
        ASSERT_EQ(*r, native.erase(key) == 1) << "erase " << key;
      }
    }
  }  // the pool frees its unused spares
  ExpectSame(*tree, native, rng);
  EXPECT_GT(stats.splits, 0u);
}

}  // namespace
}  // namespace pulse::ds::testing
