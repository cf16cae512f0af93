// The ordered trees (Map, MultiMap, Set, MultiSet, AvlTree, SplayTree,
// ScapegoatTree) against std::map / multimap / set / multiset: random
// insert / erase / find / lower_bound / upper_bound / count / range
// aggregation / scan sequences with fixed seeds, every read run offloaded,
// at the CPU node and as the dispatch engine decides (kModes); then the far
// nodes are read back and the tree's structural invariants checked.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <type_traits>
#include <vector>

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
using DsOrderedTree = DsCluster;

// Operations run by this process (each read in each mode counts as one);
// printed per test and in total at exit.
uint64_t total_operations = 0;

class OperationTotal : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("[ds_tree_test] ordered-tree operations in this run: %llu\n",
                static_cast<unsigned long long>(total_operations));
  }
};
const auto* const kOperationTotal = ::testing::AddGlobalTestEnvironment(new OperationTotal);

// The std:: container each tree is checked against.
template <typename Tree>
struct Reference {
  using type = std::map<uint64_t, uint64_t>;  // Map and the Boost-style trees
};
template <>
struct Reference<MultiMap> {
  using type = std::multimap<uint64_t, uint64_t>;
};
template <>
struct Reference<Set> {
  using type = std::set<uint64_t>;
};
template <>
struct Reference<MultiSet> {
  using type = std::multiset<uint64_t>;
};

// One tree and its reference driven by the same random operations.
template <typename Tree>
class Differential {
 public:
  using Ref = typename Reference<Tree>::type;
  static constexpr bool kSet =
      std::is_same_v<Ref, std::set<uint64_t>> || std::is_same_v<Ref, std::multiset<uint64_t>>;
  static constexpr bool kMulti = std::is_same_v<Ref, std::multimap<uint64_t, uint64_t>> ||
                                 std::is_same_v<Ref, std::multiset<uint64_t>>;

  Differential(Client* client, Tree& tree, uint64_t seed, uint64_t keys)
      : client_(client), tree_(tree), rng_(seed), keys_(keys) {}

  const Ref& ref() const { return ref_; }
  uint64_t operations() const { return operations_; }
  // Of the find/contains reads, the share that found the key.
  double hit_rate() const { return finds_ == 0 ? 0 : static_cast<double>(hits_) / finds_; }

  // One random operation, read-heavy so that lookups dominate the cost: 10%
  // updates, 88% point and short range reads (each in every mode), 2% scans.
  void Step() {
    const uint64_t kind = rng_() % 100;
    const uint64_t key = rng_() % keys_;
    if (kind < 6) {
      Insert(key, rng_() % 1000000, kind < 1);
    } else if (kind < 10) {
      Erase(key, kind < 8);
    } else if (kind < 45) {
      ForEachMode([&] { Find(key); });
    } else if (kind < 65) {
      ForEachMode([&] { Bound(key, false); });
    } else if (kind < 82) {
      ForEachMode([&] { Bound(key, true); });
    } else if (kind < 92) {
      const uint64_t hi = key + rng_() % 24;
      ForEachMode([&] { AggregateMatches(key, hi); });
    } else if (kind < 98) {
      ForEachMode([&] { Count(key); });
    } else {
      Scan(key, key + rng_() % 48, 1 + rng_() % 16);
    }
    ASSERT_EQ(tree_.size(), ref_.size());
  }

  // The whole tree: an aggregate in each mode, a scan, and the far nodes.
  void CheckAll(double alpha = 0, uint64_t max_size = 0) {
    ForEachMode([&] { AggregateMatches(0, UINT64_MAX); });
    auto all = tree_.Scan(0, UINT64_MAX);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    std::vector<Entry> want;
    for (const auto& v : ref_) want.push_back(EntryOf(v));
    EXPECT_EQ(*all, want);
    const TreeShape shape = CheckTree(client_, tree_.root(), tree_.balance(),
                                      alpha, max_size);
    EXPECT_TRUE(shape.errors.empty()) << ::testing::PrintToString(shape.errors);
    EXPECT_EQ(shape.entries, want);
  }

 private:
  static Entry EntryOf(const typename Ref::value_type& v) {
    if constexpr (kSet) {
      return {v, v};
    } else {
      return {v.first, v.second};
    }
  }

  template <typename F>
  void ForEachMode(F read) {
    for (ExecutionMode mode : kModes) {
      tree_.set_mode(mode);
      read();
      ++operations_;
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  // Insert; `variant`: insert_or_assign for maps, a second copy for multi.
  void Insert(uint64_t key, uint64_t value, bool variant) {
    ++operations_;
    if constexpr (kMulti) {
      for (int copies = variant ? 2 : 1; copies > 0; --copies) {
        Status s = kSet ? InsertOne(key, key) : InsertOne(key, value);
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
    } else if constexpr (kSet) {
      auto r = tree_.Insert(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, ref_.insert(key).second) << "insert " << key;
    } else {
      auto r = variant ? tree_.InsertOrAssign(key, value) : tree_.Insert(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const bool want = variant ? ref_.insert_or_assign(key, value).second
                                : ref_.emplace(key, value).second;
      EXPECT_EQ(*r, want) << "insert " << key;
    }
  }
  Status InsertOne(uint64_t key, uint64_t value) {
    if constexpr (kSet) {
      ref_.insert(key);
      return tree_.Insert(key);
    } else {
      ref_.emplace(key, value);
      return tree_.Insert(key, value);
    }
  }

  // Erase; for multi trees `one` erases the first copy only.
  void Erase(uint64_t key, bool one) {
    ++operations_;
    if (kMulti && one) {
      if constexpr (kMulti) {
        auto r = tree_.EraseOne(key);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        auto it = ref_.find(key);
        EXPECT_EQ(*r, it != ref_.end()) << "erase one " << key;
        if (it != ref_.end()) ref_.erase(ref_.lower_bound(key));
      }
      return;
    }
    auto r = tree_.Erase(key);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(static_cast<uint64_t>(*r), ref_.erase(key)) << "erase " << key;
  }

  void Find(uint64_t key) {
    auto want = ref_.lower_bound(key);  // the first equal key
    const bool present = want != ref_.end() && EntryOf(*want).first == key;
    hits_ += present;
    ++finds_;
    if constexpr (kSet) {
      auto r = tree_.Contains(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, present) << "contains " << key;
    } else {
      auto r = tree_.Find(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->has_value(), present) << "find " << key;
      if (present) {
        EXPECT_EQ(**r, want->second) << "find " << key;
      }
    }
  }

  void Bound(uint64_t key, bool upper) {
    auto want = upper ? ref_.upper_bound(key) : ref_.lower_bound(key);
    auto r = upper ? tree_.UpperBound(key) : tree_.LowerBound(key);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->has_value(), want != ref_.end()) << (upper ? "upper" : "lower") << " " << key;
    if (want != ref_.end()) {
      EXPECT_EQ(**r, EntryOf(*want)) << (upper ? "upper " : "lower ") << key;
    }
  }

  void AggregateMatches(uint64_t lo, uint64_t hi) {
    Aggregate want;
    for (auto it = ref_.lower_bound(lo); it != ref_.end() && EntryOf(*it).first <= hi; ++it) {
      const uint64_t v = EntryOf(*it).second;
      want.sum += v;
      want.min = std::min(want.min, v);
      want.max = std::max(want.max, v);
      ++want.count;
    }
    auto r = tree_.AggregateRange(lo, hi);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, want) << "aggregate [" << lo << ", " << hi << "]: count " << r->count
                        << ", want " << want.count;
  }

  void Count(uint64_t key) {
    auto r = tree_.Count(key);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, ref_.count(key)) << "count " << key;
  }

  void Scan(uint64_t lo, uint64_t hi, size_t limit) {
    ++operations_;
    auto r = tree_.Scan(lo, hi, limit);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<Entry> want;
    for (auto it = ref_.lower_bound(lo);
         it != ref_.end() && EntryOf(*it).first <= hi && want.size() < limit; ++it) {
      want.push_back(EntryOf(*it));
    }
    EXPECT_EQ(*r, want) << "scan [" << lo << ", " << hi << "] limit " << limit;
  }

  Client* client_;
  Tree& tree_;
  Ref ref_;
  std::mt19937_64 rng_;
  uint64_t keys_;
  uint64_t operations_ = 0;
  uint64_t hits_ = 0;
  uint64_t finds_ = 0;
};

// Runs `steps` random operations on a new tree of type Tree, then the full
// checks; reports the operation count.
template <typename Tree>
void RunDifferential(Client* client, uint64_t seed, uint64_t steps,
                     const OrderedTreeOptions& options = {}) {
  auto created = Tree::Create(client, options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Tree& tree = **created;
  // Keys dense enough that most lookups hit: the tree holds about half of them.
  const uint64_t keys = std::clamp<uint64_t>(steps / 32, 64, 512);
  Differential<Tree> d(client, tree, seed, keys);
  for (uint64_t i = 0; i < steps && !::testing::Test::HasFailure(); ++i) d.Step();
  if constexpr (std::is_same_v<Tree, ScapegoatTree>) {
    d.CheckAll(tree.alpha(), tree.max_size());
  } else {
    d.CheckAll();
  }
  EXPECT_GT(d.hit_rate(), 0.3) << "lookups should mostly hit";
  total_operations += d.operations();
  ::testing::Test::RecordProperty("operations", std::to_string(d.operations()));
  std::printf("[ds_tree_test] %llu operations, final size %zu\n",
              static_cast<unsigned long long>(d.operations()), tree.size());
}

// Random-operation steps per structure: about 2.76 operations each, so the
// seven structures run about 7 * 23500 * 2.76 = 454,000 operations.
constexpr uint64_t kSteps = 23500;

TEST_F(DsOrderedTree, MapMatchesStdMap) {
  RunDifferential<Map>(client_.get(), 11, ScaledOps(kSteps));
  ExpectBothPathsUsed();
}
TEST_F(DsOrderedTree, MultiMapMatchesStdMultimap) {
  RunDifferential<MultiMap>(client_.get(), 12, ScaledOps(kSteps));
  ExpectBothPathsUsed();
}
TEST_F(DsOrderedTree, SetMatchesStdSet) {
  RunDifferential<Set>(client_.get(), 13, ScaledOps(kSteps));
  ExpectBothPathsUsed();
}
TEST_F(DsOrderedTree, MultiSetMatchesStdMultiset) {
  RunDifferential<MultiSet>(client_.get(), 14, ScaledOps(kSteps));
  ExpectBothPathsUsed();
}
TEST_F(DsOrderedTree, AvlTreeMatchesStdMap) {
  RunDifferential<AvlTree>(client_.get(), 15, ScaledOps(kSteps));
  ExpectBothPathsUsed();
}
TEST_F(DsOrderedTree, SplayTreeMatchesStdMap) {
  RunDifferential<SplayTree>(client_.get(), 16, ScaledOps(kSteps));
  ExpectBothPathsUsed();
}
TEST_F(DsOrderedTree, ScapegoatTreeMatchesStdMap) {
  RunDifferential<ScapegoatTree>(client_.get(), 17, ScaledOps(kSteps));
  ExpectBothPathsUsed();
}

}  // namespace
}  // namespace pulse::ds::testing
