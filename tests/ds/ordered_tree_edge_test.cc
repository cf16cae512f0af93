// The ordered trees' corners: bad options, empty trees, extreme keys, sorted
// insertions and erasures (the worst case for balancing), and what a splay
// tree's lookups do to its root.
#include <cmath>

#include "bench/ds_bench_targets_trees.h"

#include "support/ds_cluster.h"
#include "ds/iterators/ds_nodes.h"
#include "ds/tree_checks.h"
#include "pulse/ds/avl_tree.h"
#include "pulse/ds/map.h"
#include "pulse/ds/scapegoat_tree.h"
#include "pulse/ds/set.h"
#include "pulse/ds/splay_tree.h"

namespace pulse::ds::testing {
namespace {

using Entry = OrderedTree::Entry;
using DsOrderedTreeEdges = DsCluster;

uint64_t RootKey(Client* client, const OrderedTree& tree) {
  pulse_ds_bst_node n{};
  EXPECT_TRUE(client->Read(tree.root(), &n, sizeof(n)).ok());
  return n.key;
}

TEST_F(DsOrderedTreeEdges, BadArgumentsAreRejected) {
  EXPECT_EQ(Map::Create(nullptr).status().code(), Status::Code::kInvalidArgument);
  for (double alpha : {0.5, 1.0, 0.2, std::nan("")}) {
    OrderedTreeOptions options;
    options.scapegoat_alpha = alpha;
    auto t = ScapegoatTree::Create(client_.get(), options);
    ASSERT_FALSE(t.ok()) << alpha;
    EXPECT_EQ(t.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(t.status().message().find("scapegoat_alpha"), std::string::npos);
  }
}

TEST_F(DsOrderedTreeEdges, EmptyTreesAndExtremeKeys) {
  auto map = Map::Create(client_.get(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(map.ok());
  Map& m = **map;
  auto none = m.LowerBound(0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto agg = m.AggregateRange(0, UINT64_MAX);
  ASSERT_TRUE(agg.ok());
  EXPECT_EQ(*agg, Aggregate{});
  auto erased = m.Erase(5);
  ASSERT_TRUE(erased.ok());
  EXPECT_FALSE(*erased);
  for (uint64_t k : {uint64_t{0}, UINT64_MAX, uint64_t{1} << 63}) ASSERT_TRUE(m.Insert(k, k / 2).ok());
  for (ExecutionMode mode : kModes) {
    m.set_mode(mode);
    auto top = m.UpperBound(UINT64_MAX);
    ASSERT_TRUE(top.ok());
    EXPECT_FALSE(top->has_value());
    auto max = m.LowerBound(UINT64_MAX);
    ASSERT_TRUE(max.ok());
    ASSERT_TRUE(max->has_value());
    EXPECT_EQ(**max, (Entry{UINT64_MAX, UINT64_MAX / 2}));
    auto first = m.UpperBound(0);
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(first->has_value());
    EXPECT_EQ((*first)->first, uint64_t{1} << 63);
    auto all = m.AggregateRange(0, UINT64_MAX);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->count, 3u);
    EXPECT_EQ(all->min, 0u);
    EXPECT_EQ(all->max, UINT64_MAX / 2);
    auto inverted = m.AggregateRange(10, 9);
    ASSERT_TRUE(inverted.ok());
    EXPECT_EQ(*inverted, Aggregate{});
  }
  // A multiset keeps duplicates in order; erase-one and erase-all.
  auto ms = MultiSet::Create(client_.get());
  ASSERT_TRUE(ms.ok());
  for (uint64_t k : {7, 3, 7, 7, 1}) ASSERT_TRUE((*ms)->Insert(k).ok());
  auto c = (*ms)->Count(7);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, 3u);
  auto one = (*ms)->EraseOne(7);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(*one);
  auto rest = (*ms)->Erase(7);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(*rest, 2u);
  auto left = (*ms)->Scan(0, 100);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(*left, (std::vector<Entry>{{1, 1}, {3, 3}}));
}

// Ascending insertions, then erasing most keys from the front: every
// balancing scheme must keep its invariant (and a logarithmic height).
template <typename Tree>
void SortedInsertsAndErases(Client* client, uint64_t n, OrderedTreeOptions options = {}) {
  auto created = Tree::Create(client, options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Tree& tree = **created;
  auto check = [&](uint64_t first, uint64_t last) {
    double alpha = 0;
    uint64_t max_size = 0;
    if constexpr (std::is_same_v<Tree, ScapegoatTree>) {
      alpha = tree.alpha();
      max_size = tree.max_size();
    }
    const TreeShape shape = CheckTree(client, tree.root(), tree.balance(), alpha, max_size);
    EXPECT_TRUE(shape.errors.empty()) << ::testing::PrintToString(shape.errors);
    ASSERT_EQ(shape.entries.size(), last - first);
    for (uint64_t k = first; k < last; ++k) ASSERT_EQ(shape.entries[k - first], (Entry{k, k * 3}));
    if (tree.balance() != TreeBalance::kSplay) {  // at most 2 log2(n + 1) levels
      EXPECT_LE(shape.height, 2 * std::log2(static_cast<double>(last - first) + 1) + 1);
    }
  };
  for (uint64_t k = 0; k < n; ++k) ASSERT_TRUE(tree.Insert(k, k * 3).ok());
  check(0, n);
  for (uint64_t k = 0; k < n * 3 / 4; ++k) {
    auto e = tree.Erase(k);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_TRUE(*e) << k;
  }
  check(n * 3 / 4, n);
  for (ExecutionMode mode : kModes) {
    tree.set_mode(mode);
    auto a = tree.AggregateRange(0, UINT64_MAX);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->count, n - n * 3 / 4);
    EXPECT_EQ(a->min, n * 3 / 4 * 3);
  }
}

TEST_F(DsOrderedTreeEdges, SortedInsertsKeepEveryTreeBalanced) {
  SortedInsertsAndErases<Map>(client_.get(), 600);
  SortedInsertsAndErases<AvlTree>(client_.get(), 600);
  SortedInsertsAndErases<ScapegoatTree>(client_.get(), 600);
  OrderedTreeOptions tight;
  tight.scapegoat_alpha = 0.55;
  SortedInsertsAndErases<ScapegoatTree>(client_.get(), 600, tight);
  SortedInsertsAndErases<SplayTree>(client_.get(), 600);
}

TEST_F(DsOrderedTreeEdges, SplayTreeLookupsSplayTheNodeTheyLandOn) {
  auto created = SplayTree::Create(client_.get());
  ASSERT_TRUE(created.ok());
  SplayTree& tree = **created;
  EXPECT_TRUE(tree.splay_on_access());
  for (uint64_t k = 0; k < 400; ++k) ASSERT_TRUE(tree.Insert(k * 2, k).ok());  // even keys
  EXPECT_EQ(RootKey(client_.get(), tree), 798u);  // inserts splay the new key
  uint64_t probe = 3;
  for (ExecutionMode mode : kModes) {
    tree.set_mode(mode);
    probe = (probe * 97 + 31) % 800 & ~uint64_t{1};
    auto f = tree.Find(probe);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->has_value());
    EXPECT_EQ(RootKey(client_.get(), tree), probe) << "Find splays the key found";
    auto lb = tree.LowerBound(probe + 101);  // odd: lands on probe + 102
    ASSERT_TRUE(lb.ok());
    ASSERT_TRUE(lb->has_value());
    EXPECT_EQ(RootKey(client_.get(), tree), probe + 102);
    auto miss = tree.Find(probe + 1);  // a miss splays a neighbour
    ASSERT_TRUE(miss.ok());
    EXPECT_FALSE(miss->has_value());
    const uint64_t root = RootKey(client_.get(), tree);
    EXPECT_TRUE(root == probe || root == probe + 2) << root;
  }
  // Reads that do not splay: aggregation and scans; lookups with splaying off.
  const uint64_t root = tree.root();
  ASSERT_TRUE(tree.AggregateRange(0, 100).ok());
  ASSERT_TRUE(tree.Scan(300, 400).ok());
  tree.set_splay_on_access(false);
  auto f = tree.Find(10);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->has_value());
  EXPECT_EQ(**f, 5u);
  EXPECT_EQ(tree.root(), root);
  const TreeShape shape = CheckTree(client_.get(), tree.root(), TreeBalance::kSplay);
  EXPECT_TRUE(shape.errors.empty()) << ::testing::PrintToString(shape.errors);
  EXPECT_EQ(shape.entries.size(), 400u);
}

// The `pulse bench ds` adapters: every tree loads 0..n-1 and finds exactly those.
TEST_F(DsOrderedTreeEdges, BenchTargetsLoadAndLookUp) {
  bench::DsBenchTargets targets;
  bench::AddTreeBenchTargets(targets);
  ASSERT_EQ(targets.size(), 7u);
  for (auto& target : targets) {
    SCOPED_TRACE(target->name());
    Status s = target->Load(client_.get(), 120);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (uint64_t key : {uint64_t{0}, uint64_t{77}, uint64_t{119}, uint64_t{120}, uint64_t{5000}}) {
      for (ExecutionMode mode : kModes) {
        auto found = target->Lookup(key, mode);
        ASSERT_TRUE(found.ok()) << found.status().ToString();
        EXPECT_EQ(*found, key < 120) << key;
      }
    }
  }
}

}  // namespace
}  // namespace pulse::ds::testing
