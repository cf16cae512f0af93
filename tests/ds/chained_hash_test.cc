// The chained-hash family against std::: UnorderedMap with rehashing (and with a fixed bucket
// count at a high load factor), the offloaded ALLOC insert (regions exhausted and replenished,
// nodes readable with plain Client::Read), UnorderedSet and Bimap; fixed seeds, every read in
// each of kModes, inserts in a random mode.
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "ds/chained_hash.h"
#include "support/ds_cluster.h"
#include "ds/iterators/ds_nodes.h"
#include "ds/lists_test_util.h"
#include "pulse/ds/bimap.h"
#include "pulse/ds/unordered_map.h"
#include "pulse/ds/unordered_set.h"

namespace pulse::ds::testing {
namespace {

using DsChainedHash = DsCluster;

ExecutionMode AnyMode(std::mt19937_64& rng) { return kModes[rng() % 3]; }

// Random insert / insert_or_assign / erase / find on `map` against std::unordered_map.
// `native` holds what the map holds.
void RunMapOps(UnorderedMap& map, std::unordered_map<uint64_t, uint64_t>& native, uint64_t seed,
               uint64_t ops, uint64_t key_space) {
  std::mt19937_64 rng(seed);
  uint64_t hits = 0;
  for (uint64_t op = 0; op < ops; ++op) {
    const uint64_t key = rng() % key_space, value = rng();
    const int kind = static_cast<int>(rng() % 10);  // 60% finds
    if (kind < 2) {
      map.set_mode(AnyMode(rng));  // the insert traversal runs in any mode too
      auto r = map.Insert(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, native.emplace(key, value).second) << "insert " << key;
    } else if (kind < 3) {
      map.set_mode(AnyMode(rng));
      auto r = map.InsertOrAssign(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, native.insert_or_assign(key, value).second) << "insert_or_assign " << key;
    } else if (kind < 4) {
      auto r = map.Erase(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, native.erase(key) == 1) << "erase " << key;
    } else {
      auto it = native.find(key);
      for (ExecutionMode mode : kModes) {
        map.set_mode(mode);
        auto r = map.Find(key);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(r->has_value(), it != native.end()) << "find " << key;
        if (it != native.end()) {
          ASSERT_EQ(**r, it->second) << "find " << key;
        }
        ++OpsCounted();
      }
      hits += it != native.end();
    }
    ++OpsCounted();
    ASSERT_EQ(map.size(), native.size());
    if (map.max_load_factor() > 0) {
      ASSERT_LE(map.load_factor(), map.max_load_factor());
    }
  }
  if (ops >= 1000) {
    EXPECT_GT(hits, ops / 50) << "the mix should find present keys";
  }
  for (const auto& [key, value] : native) {  // every key at the end
    auto r = map.Find(key);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(*r, std::optional<uint64_t>(value)) << key;
  }
}

TEST_F(DsChainedHash, UnorderedMapRehashesAndMatchesStd) {
  UnorderedMapOptions options;
  options.buckets = 4;
  options.max_load_factor = 1.0;
  auto created = UnorderedMap::Create(client_.get(), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::unordered_map<uint64_t, uint64_t> native;
  RunMapOps(**created, native, 31, ScaledOps(30000), 3000);
  EXPECT_GE((*created)->bucket_count(), 512u) << "the bucket array should have grown";
  // An explicit rehash to fewer buckets keeps every element; a fixed count stays.
  const uint64_t fewer = (*created)->bucket_count() / 4 + 1;
  ASSERT_TRUE((*created)->Rehash(fewer).ok());
  EXPECT_EQ((*created)->bucket_count(), fewer);
  (*created)->set_max_load_factor(0);
  RunMapOps(**created, native, 32, ScaledOps(5000), 3000);
  EXPECT_EQ((*created)->bucket_count(), fewer);
  EXPECT_GT((*created)->region_stats().offloaded_inserts, 0u);
  ExpectBothPathsUsed();
}

TEST_F(DsChainedHash, FixedBucketCountAtHighLoadFactor) {
  UnorderedMapOptions options;
  options.buckets = 16;
  options.max_load_factor = 0;
  auto created = UnorderedMap::Create(client_.get(), options);
  ASSERT_TRUE(created.ok());
  std::unordered_map<uint64_t, uint64_t> native;
  RunMapOps(**created, native, 33, ScaledOps(4000), 400);  // chains of ~12 nodes
  EXPECT_EQ((*created)->bucket_count(), 16u);
  EXPECT_GT((*created)->load_factor(), 1.0) << "above the default max_load_factor, not rehashed";
}

// The ALLOC insert, on the core itself to see the node addresses.
TEST_F(DsChainedHash, AllocInsertExhaustsAndReplenishesRegions) {
  for (uint32_t per_request : {0u, 2u}) {
    internal::ChainedHashOptions o;
    o.buckets = 8;
    o.max_load_factor = 0;  // chains, and no rehash moving nodes' next fields
    o.mode = ExecutionMode::kOffload;
    o.regions_per_request = per_request;
    o.region_batch = 3;
    auto created = internal::ChainedHash::Create(client_.get(), o);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    internal::ChainedHash& hash = **created;
    std::mt19937_64 rng(34 + per_request);
    std::unordered_map<uint64_t, uint64_t> native;
    uint64_t inserted = 0;
    for (uint64_t i = 0; i < ScaledOps(300); ++i) {
      const uint64_t key = rng() % 200, value = rng();
      auto r = hash.Insert(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      auto [it, fresh] = native.emplace(key, value);
      ASSERT_EQ(r->inserted, fresh) << key;
      ASSERT_EQ(r->value, it->second) << key;
      // The node the memory node allocated and linked reads back plainly.
      pulse_ds_umap_node n{};
      ASSERT_TRUE(client_->Read(r->node, &n, sizeof(n)).ok());
      EXPECT_EQ(n.key, key);
      EXPECT_EQ(n.value, it->second);
      inserted += fresh;
      ++OpsCounted();
    }
    const RegionStats& stats = hash.region_stats();
    EXPECT_EQ(stats.offloaded_inserts, ScaledOps(300));
    if (per_request == 0) {
      // A request without regions stops once per new key.
      EXPECT_EQ(stats.exhausted, inserted);
    } else {
      EXPECT_GT(stats.exhausted, 0u);
      EXPECT_LT(stats.exhausted, inserted);
    }
    EXPECT_GE(stats.allocated, inserted);
    // Erased nodes go back to the pool: re-inserting allocates nothing new.
    const uint64_t allocated = stats.allocated;
    uint64_t erased = 0;
    for (auto it = native.begin(); it != native.end() && erased < 10; ++it, ++erased) {
      auto e = hash.Erase(it->first);
      ASSERT_TRUE(e.ok());
      ASSERT_EQ(*e, std::optional<uint64_t>(it->second));
    }
    for (uint64_t key = 1000; key < 1000 + erased; ++key) {
      auto r = hash.Insert(key, key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(r->inserted);
    }
    EXPECT_EQ(hash.region_stats().allocated, allocated);
  }
}

// An offloaded Find starts at the bucket slot (its first iteration loads the
// chain's head near memory): one request and one response, whether the
// bucket is empty, the key is the head, deeper in the chain, or absent.  The
// chain nodes are ALLOC'd on the bucket array's memory node, so every lookup
// is node-local.  Counted as bench app counts the critical path: the
// traversals' legs plus two messages per one-sided read or write; through
// the switch (PULSE_ROUTING=switch) each leg is two messages.
TEST_F(DsChainedHash, OffloadedFindIsOneRequestAndOneResponse) {
  UnorderedMapOptions options;
  options.buckets = 16;
  options.max_load_factor = 0;  // chains of several nodes, some buckets empty
  auto created = UnorderedMap::Create(client_.get(), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  UnorderedMap& map = **created;
  std::unordered_map<uint64_t, uint64_t> native;
  for (uint64_t key = 0; key < 40; key += 2) {  // odd keys are absent
    auto r = map.Insert(key, key * 7);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    native[key] = key * 7;
  }
  map.set_mode(ExecutionMode::kOffload);
  const uint64_t per_find = rack_.Routing() == "direct" ? 2 : 4;
  const auto path_messages = [](const ClientCounters& c) {
    return c.critical_path_messages + 2 * (c.remote_reads + c.remote_writes);
  };
  for (uint64_t key = 0; key < 80; ++key) {  // 16 buckets, 20 keys: some empty
    const ClientCounters before = client_->counters();
    auto r = map.Find(key);
    const ClientCounters& after = client_->counters();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto it = native.find(key);
    ASSERT_EQ(r->has_value(), it != native.end()) << "find " << key;
    if (it != native.end()) {
      ASSERT_EQ(**r, it->second) << "find " << key;
    }
    ASSERT_EQ(after.retransmissions, before.retransmissions) << "a re-send would not be on the counted path";
    EXPECT_EQ(after.offloaded - before.offloaded, 1u) << "find " << key;
    EXPECT_EQ(path_messages(after) - path_messages(before), per_find)
        << "find " << key << ", routing " << rack_.Routing();
    ++OpsCounted();
  }
}

TEST_F(DsChainedHash, RejectsBadOptions) {
  UnorderedMapOptions map_options;
  map_options.buckets = 0;
  EXPECT_EQ(UnorderedMap::Create(client_.get(), map_options).status().code(),
            Status::Code::kInvalidArgument);
  UnorderedSetOptions set_options;
  set_options.regions_per_request = 17;
  EXPECT_EQ(UnorderedSet::Create(client_.get(), set_options).status().code(),
            Status::Code::kInvalidArgument);
  BimapOptions bimap_options;
  bimap_options.region_batch = 0;
  EXPECT_EQ(Bimap::Create(client_.get(), bimap_options).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(Bimap::Create(nullptr).status().code(), Status::Code::kInvalidArgument);
}

TEST_F(DsChainedHash, UnorderedSetMatchesStd) {
  UnorderedSetOptions options;
  options.buckets = 8;
  auto created = UnorderedSet::Create(client_.get(), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  UnorderedSet& set = **created;
  std::unordered_set<uint64_t> native;
  std::mt19937_64 rng(35);
  for (uint64_t op = 0; op < ScaledOps(30000); ++op) {
    const uint64_t key = rng() % 2000;
    const int kind = static_cast<int>(rng() % 10);  // 80% lookups
    if (kind < 1) {
      set.set_mode(AnyMode(rng));
      auto r = set.Insert(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, native.insert(key).second) << "insert " << key;
    } else if (kind < 2) {
      auto r = set.Erase(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, native.erase(key) == 1) << "erase " << key;
    } else {
      for (ExecutionMode mode : kModes) {
        set.set_mode(mode);
        auto r = set.Contains(key);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(*r, native.count(key) == 1) << "contains " << key;
        ++OpsCounted();
      }
    }
    ++OpsCounted();
    ASSERT_EQ(set.size(), native.size());
  }
  EXPECT_GT(set.bucket_count(), 8u);
}

TEST_F(DsChainedHash, BimapMatchesTwoStdMaps) {
  BimapOptions options;
  options.buckets = 8;
  auto created = Bimap::Create(client_.get(), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Bimap& bimap = **created;
  std::unordered_map<uint64_t, uint64_t> by_left, by_right;
  std::mt19937_64 rng(36);
  uint64_t refused = 0;
  const uint64_t ops = ScaledOps(20000);
  for (uint64_t op = 0; op < ops; ++op) {
    const uint64_t left = rng() % 1500, right = rng() % 1500;
    const int kind = static_cast<int>(rng() % 10);  // 80% lookups
    if (kind < 1) {
      bimap.set_mode(AnyMode(rng));
      auto r = bimap.Insert(left, right);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const bool fresh = by_left.count(left) == 0 && by_right.count(right) == 0;
      ASSERT_EQ(*r, fresh) << "insert " << left << " " << right;
      if (fresh) {
        by_left[left] = right;
        by_right[right] = left;
      }
      refused += !fresh;
    } else if (kind < 2) {
      const bool by_l = rng() % 2;
      auto r = by_l ? bimap.EraseByLeft(left) : bimap.EraseByRight(right);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      auto& side = by_l ? by_left : by_right;
      auto& other = by_l ? by_right : by_left;
      auto it = side.find(by_l ? left : right);
      ASSERT_EQ(*r, it != side.end());
      if (it != side.end()) {
        other.erase(it->second);
        side.erase(it);
      }
    } else {
      for (ExecutionMode mode : kModes) {
        bimap.set_mode(mode);
        auto l = bimap.FindByLeft(left);
        ASSERT_TRUE(l.ok()) << l.status().ToString();
        auto il = by_left.find(left);
        ASSERT_EQ(*l, il == by_left.end() ? std::nullopt : std::optional<uint64_t>(il->second));
        auto r = bimap.FindByRight(right);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        auto ir = by_right.find(right);
        ASSERT_EQ(*r, ir == by_right.end() ? std::nullopt : std::optional<uint64_t>(ir->second));
        OpsCounted() += 2;
      }
    }
    ++OpsCounted();
    ASSERT_EQ(bimap.size(), by_left.size());
  }
  if (ops >= 5000) {
    EXPECT_GT(refused, ops / 200) << "the mix should refuse some pairs";
  }
  EXPECT_GT(bimap.region_stats().offloaded_inserts, 0u);
}

}  // namespace
}  // namespace pulse::ds::testing
