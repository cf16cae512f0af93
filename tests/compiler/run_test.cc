// Iterators compiled from C and run with the reference interpreter against
// native C++ implementations of the same operations over the same data.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <list>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "compiler/compiler_test_util.h"
#include "iterators/nodes.h"

namespace pulse::testing {
namespace {

// --- unordered_map::find, seed 001 Listing 3 --------------------------------

// A chained hash table in far memory mirroring a std::unordered_map.
struct FarHashTable {
  std::vector<uint64_t> buckets;  // far address of each chain's first node (0: empty)
  size_t Bucket(uint64_t key) const { return std::hash<uint64_t>{}(key) % buckets.size(); }
};

class UnorderedMapFindTest : public ::testing::TestWithParam<bool> {};

TEST_P(UnorderedMapFindTest, MatchesStdUnorderedMapOnRandomKeys) {
  CompileOptions opts;
  opts.optimize = GetParam();
  auto it = CompileTestIterator("umap_find.c", opts);
  ASSERT_TRUE(it.ok()) << it.status().message();
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);

  std::mt19937_64 rng(42);
  std::unordered_map<uint64_t, uint64_t> native;
  while (native.size() < 2000) native[rng()] = rng();

  FarMemory mem(1 << 20);
  FarHashTable table;
  table.buckets.assign(256, 0);  // ~8 nodes per chain
  for (const auto& [k, v] : native) {  // push front, like libstdc++'s buckets
    uint64_t& head = table.buckets[table.Bucket(k)];
    head = mem.New(node{k, v, head});
  }

  std::vector<uint64_t> queries;
  for (const auto& [k, v] : native) queries.push_back(k);
  for (int i = 0; i < 2000; ++i) queries.push_back(rng());
  std::shuffle(queries.begin(), queries.end(), rng);

  size_t found = 0;
  for (uint64_t key : queries) {
    // init(): key into the scratch pad, cur_ptr = the bucket's first node.
    const uint64_t head = table.buckets[table.Bucket(key)];
    auto expect = native.find(key);
    if (head == 0) {  // empty bucket: init() answers without offloading
      EXPECT_EQ(expect, native.end());
      continue;
    }
    std::vector<uint8_t> scratch(16, 0);
    PutScratch(&scratch, 0, key);
    TraversalOutcome out = RunIterator(*program, mem, head, &scratch);
    ASSERT_EQ(out.status, TraversalStatus::kDone) << TraversalStatusName(out.status);
    if (expect != native.end()) {
      ++found;
      EXPECT_EQ(GetScratch<uint64_t>(scratch, 0), expect->second) << "key " << key;
    } else {
      EXPECT_EQ(GetScratch<uint32_t>(scratch, 0), KEY_NOT_FOUND) << "key " << key;
    }
  }
  EXPECT_EQ(found, native.size());
}

INSTANTIATE_TEST_SUITE_P(OptimizedAndNot, UnorderedMapFindTest, ::testing::Values(true, false));

// --- std::list find ----------------------------------------------------------

TEST(CompiledIteratorRun, ListFindMatchesStdFind) {
  auto it = CompileTestIterator("list_find.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);

  std::mt19937_64 rng(7);
  struct Elem {
    uint64_t key, v0, v1;
  };
  std::list<Elem> native;
  std::set<uint64_t> keys;
  while (keys.size() < 300) keys.insert(rng() % 100000);
  for (uint64_t k : keys) native.push_back({k, rng(), rng()});
  std::vector<Elem> shuffled(native.begin(), native.end());
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  native.assign(shuffled.begin(), shuffled.end());

  FarMemory mem(1 << 20);
  std::vector<uint64_t> addrs;
  for (size_t i = 0; i < shuffled.size(); ++i) addrs.push_back(mem.Alloc(sizeof(list_node)));
  std::shuffle(addrs.begin(), addrs.end(), rng);  // nodes scattered in memory
  for (size_t i = 0; i < shuffled.size(); ++i) {
    list_node n{};
    n.next = i + 1 < addrs.size() ? addrs[i + 1] : 0;
    n.prev = i > 0 ? addrs[i - 1] : 0;
    n.key = shuffled[i].key;
    n.value[0] = shuffled[i].v0;
    n.value[1] = shuffled[i].v1;
    *mem.At<list_node>(addrs[i]) = n;
  }

  for (int q = 0; q < 600; ++q) {
    const uint64_t key = rng() % 100000;
    std::vector<uint8_t> scratch(32, 0);
    PutScratch(&scratch, 0, key);
    TraversalOutcome out = RunIterator(*program, mem, addrs[0], &scratch);
    ASSERT_EQ(out.status, TraversalStatus::kDone);
    auto e = std::find_if(native.begin(), native.end(), [&](const Elem& x) { return x.key == key; });
    if (e == native.end()) {
      EXPECT_EQ(GetScratch<uint64_t>(scratch, 8), 0u);
      EXPECT_EQ(out.iterations, native.size());
    } else {
      EXPECT_EQ(GetScratch<uint64_t>(scratch, 8), 1u);
      EXPECT_EQ(GetScratch<uint64_t>(scratch, 16), e->v0);
      EXPECT_EQ(GetScratch<uint64_t>(scratch, 24), e->v1);
      EXPECT_EQ(out.iterations, static_cast<uint32_t>(std::distance(native.begin(), e)) + 1);
    }
  }
}

// --- B-tree lower_bound --------------------------------------------------------

static_assert(sizeof(btree_node) == 256, "a B-tree node fills the largest window");

// Builds a B-tree over sorted keys[lo, hi); returns the root's far address.
uint64_t BuildBTree(FarMemory* mem, const std::vector<uint64_t>& keys, size_t lo, size_t hi,
                    std::mt19937_64* rng) {
  btree_node n{};
  const size_t count = hi - lo;
  const uint64_t addr = mem->Alloc(sizeof(btree_node));
  const size_t leaf_max = 8 + (*rng)() % 8;  // leaves of 8..15 keys
  if (count <= leaf_max) {
    n.leaf = 1;
    n.count = static_cast<uint32_t>(count);
    for (size_t i = 0; i < count; ++i) n.keys[i] = keys[lo + i];
  } else {
    const size_t children = std::min<size_t>(BTREE_MAX_KEYS + 1, std::max<size_t>(2, (count + 1) / 12 + 1));
    const size_t rest = count - (children - 1);  // keys below the separators
    size_t at = lo;
    n.count = static_cast<uint32_t>(children - 1);
    for (size_t c = 0; c < children; ++c) {
      const size_t size = rest / children + (c < rest % children ? 1 : 0);
      n.child[c] = BuildBTree(mem, keys, at, at + size, rng);
      at += size;
      if (c + 1 < children) n.keys[c] = keys[at++];
    }
  }
  *mem->At<btree_node>(addr) = n;
  return addr;
}

TEST(CompiledIteratorRun, BTreeLowerBoundMatchesStdLowerBound) {
  auto it = CompileTestIterator("btree_lower_bound.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);
  EXPECT_TRUE(program->info().has_indexed);  // child[i] is register-indexed
  EXPECT_EQ(program->info().window_bytes, 256u);

  std::mt19937_64 rng(99);
  std::set<uint64_t> keyset;
  while (keyset.size() < 5000) keyset.insert(rng() % 1000000 + 10);
  const std::vector<uint64_t> keys(keyset.begin(), keyset.end());
  FarMemory mem(4 << 20);
  const uint64_t root = BuildBTree(&mem, keys, 0, keys.size(), &rng);

  std::vector<uint64_t> queries = {0, 5, keys.front(), keys.back(), keys.back() + 1, 2000000};
  for (int i = 0; i < 1500; ++i) queries.push_back(rng() % 1000020);
  for (int i = 0; i < 500; ++i) queries.push_back(keys[rng() % keys.size()]);
  for (uint64_t key : queries) {
    std::vector<uint8_t> scratch(sizeof(btree_state), 0);
    btree_state st{};
    st.key = key;
    PutScratch(&scratch, 0, st);
    TraversalOutcome out = RunIterator(*program, mem, root, &scratch);
    ASSERT_EQ(out.status, TraversalStatus::kDone) << TraversalStatusName(out.status);
    st = GetScratch<btree_state>(scratch, 0);
    auto e = std::lower_bound(keys.begin(), keys.end(), key);
    if (e == keys.end()) {
      EXPECT_EQ(st.found, 0u) << "key " << key;
    } else {
      ASSERT_EQ(st.found, 1u) << "key " << key;
      EXPECT_EQ(st.result, *e) << "key " << key;
      // The result is an iterator: (node, position).
      EXPECT_EQ(mem.At<btree_node>(st.node)->keys[st.pos], *e);
    }
  }
}

// --- red-black tree lower_bound ------------------------------------------------

// A red-black tree over sorted keys: perfectly balanced, with the nodes of an
// incomplete last level red (a valid colouring).
struct RbBuilder {
  FarMemory* mem;
  const std::vector<std::pair<uint64_t, uint64_t>>* items;
  int max_depth;

  uint64_t Build(size_t lo, size_t hi, uint64_t parent, int depth) {
    if (lo >= hi) return 0;
    const size_t mid = lo + (hi - lo) / 2;
    const uint64_t addr = mem->Alloc(sizeof(rb_node));
    rb_node n{};
    n.parent = parent;
    n.key = (*items)[mid].first;
    n.value = (*items)[mid].second;
    n.color = depth == max_depth ? 0 /* red */ : 1 /* black */;
    n.left = Build(lo, mid, addr, depth + 1);
    n.right = Build(mid + 1, hi, addr, depth + 1);
    *mem->At<rb_node>(addr) = n;
    return addr;
  }
};

int Depth(size_t n) {  // depth of the deepest node of a balanced tree of n nodes
  int d = -1;
  while (n) {
    n /= 2;
    ++d;
  }
  return d;
}

TEST(CompiledIteratorRun, RedBlackTreeLowerBoundMatchesStdMap) {
  auto it = CompileTestIterator("rbtree_lower_bound.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);

  std::mt19937_64 rng(5);
  std::map<uint64_t, uint64_t> native;
  while (native.size() < 3000) native[rng() % 10000000] = rng();
  const std::vector<std::pair<uint64_t, uint64_t>> items(native.begin(), native.end());
  FarMemory mem(1 << 20);
  RbBuilder b{&mem, &items, Depth(items.size())};
  const uint64_t root = b.Build(0, items.size(), 0, 0);

  for (int q = 0; q < 2000; ++q) {
    const uint64_t key = q % 4 == 0 ? items[rng() % items.size()].first : rng() % 10000100;
    std::vector<uint8_t> scratch(sizeof(rb_state), 0);
    PutScratch(&scratch, 0, rb_state{key, 0, 0, 0});
    TraversalOutcome out = RunIterator(*program, mem, root, &scratch);
    ASSERT_EQ(out.status, TraversalStatus::kDone);
    const rb_state st = GetScratch<rb_state>(scratch, 0);
    auto e = native.lower_bound(key);
    if (e == native.end()) {
      EXPECT_EQ(st.found, 0u);
    } else {
      ASSERT_EQ(st.found, 1u) << "key " << key;
      EXPECT_EQ(st.result_key, e->first);
      EXPECT_EQ(st.result_value, e->second);
    }
    EXPECT_LE(out.iterations, static_cast<uint32_t>(Depth(items.size()) + 1));
  }
}

// --- range aggregation -------------------------------------------------------

TEST(CompiledIteratorRun, RangeAggregationMatchesNativeScan) {
  auto it = CompileTestIterator("range_aggregate.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->info().window_bytes, sizeof(ts_leaf));

  std::mt19937_64 rng(11);
  std::vector<ts_point> points;
  uint64_t ts = 1000;
  for (int i = 0; i < 3000; ++i) {
    ts += 1 + rng() % 50;
    points.push_back({ts, static_cast<int64_t>(rng() % 2000001) - 1000000});
  }
  FarMemory mem(1 << 20);
  struct LeafInfo {
    uint64_t addr, last_ts;
  };
  std::vector<LeafInfo> leaves;
  size_t at = 0;
  while (at < points.size()) {
    const size_t n = std::min<size_t>(points.size() - at, 6 + rng() % 9);
    ts_leaf leaf{};
    leaf.count = static_cast<uint32_t>(n);
    for (size_t i = 0; i < n; ++i) leaf.points[i] = points[at + i];
    leaves.push_back({mem.New(leaf), points[at + n - 1].ts});
    at += n;
  }
  for (size_t i = 0; i + 1 < leaves.size(); ++i) mem.At<ts_leaf>(leaves[i].addr)->next = leaves[i + 1].addr;

  for (int q = 0; q < 500; ++q) {
    uint64_t lo = 900 + rng() % (ts + 200), hi = lo + rng() % 3000;
    if (q % 10 == 0) hi = lo;
    // init(): the first leaf that may hold lo (the index's job on the CPU node).
    auto leaf = std::find_if(leaves.begin(), leaves.end(), [&](const LeafInfo& l) { return l.last_ts >= lo; });
    if (leaf == leaves.end()) continue;
    agg_state st{lo, hi, 0, INT64_MAX, INT64_MIN, 0};
    std::vector<uint8_t> scratch(sizeof(agg_state), 0);
    PutScratch(&scratch, 0, st);
    TraversalOutcome out = RunIterator(*program, mem, leaf->addr, &scratch);
    ASSERT_EQ(out.status, TraversalStatus::kDone) << TraversalStatusName(out.status);
    st = GetScratch<agg_state>(scratch, 0);
    agg_state expect{lo, hi, 0, INT64_MAX, INT64_MIN, 0};
    for (const auto& p : points) {
      if (p.ts < lo || p.ts > hi) continue;
      expect.sum += p.value;
      expect.min = std::min(expect.min, p.value);
      expect.max = std::max(expect.max, p.value);
      ++expect.count;
    }
    EXPECT_EQ(st.count, expect.count) << "[" << lo << ", " << hi << "]";
    EXPECT_EQ(st.sum, expect.sum);
    EXPECT_EQ(st.min, expect.min);
    EXPECT_EQ(st.max, expect.max);
  }
}

}  // namespace
}  // namespace pulse::testing
