// The CPU-node cache (ClientOptions::cache) under the data structures: a
// cached client and an uncached one run the same operations on their own
// B+trees and lists and must agree with each other and with std::; the
// cache stays within its budget; dirty cached writes are visible to
// traversals offloaded later; counters move.
#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>

#include "support/ds_cluster.h"
#include "ds/ops_tally.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/list.h"

namespace pulse::ds::testing {
namespace {

struct CacheCase {
  std::string name;
  CacheOptions cache;
};

class DsCache : public DsCluster, public ::testing::WithParamInterface<CacheCase> {
 protected:
  std::unique_ptr<Client> Connect(const CacheOptions& cache) {
    ClientOptions options = RackClientOptions();
    options.cache = cache;
    return ConnectClient(options);
  }
};

TEST_P(DsCache, BTreeWithCacheMatchesWithout) {
  const CacheOptions cache = GetParam().cache;
  std::unique_ptr<Client> cached = Connect(cache);
  ASSERT_NE(cached, nullptr);
  auto plain_tree = BTree::Create(client_.get());
  auto cached_tree = BTree::Create(cached.get());
  ASSERT_TRUE(plain_tree.ok() && cached_tree.ok());
  BTree& a = **plain_tree;
  BTree& b = **cached_tree;
  std::map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(5);
  constexpr uint64_t kKeys = 4000;
  uint64_t ops = 0;
  // Not scaled down: the tree must outgrow the cache's budget (evictions,
  // offloads from the first uncached node).
  const uint64_t n = 4500;
  for (uint64_t op = 0; op < n; ++op) {
    const int kind = static_cast<int>(rng() % 10);
    const uint64_t key = rng() % kKeys;
    if (kind < 4) {
      const uint64_t value = rng();
      auto ra = a.Insert(key, value), rb = b.Insert(key, value);
      ASSERT_TRUE(ra.ok() && rb.ok()) << rb.status().ToString();
      ASSERT_EQ(*rb, native.emplace(key, value).second);
      ASSERT_EQ(*ra, *rb);
      ops += 1;
    } else if (kind < 5) {
      auto ra = a.Erase(key), rb = b.Erase(key);
      ASSERT_TRUE(ra.ok() && rb.ok()) << rb.status().ToString();
      ASSERT_EQ(*rb, native.erase(key) == 1);
      ASSERT_EQ(*ra, *rb);
      ops += 1;
    } else {
      auto want = native.lower_bound(key);
      for (ExecutionMode mode : kModes) {
        a.set_mode(mode);
        b.set_mode(mode);
        auto la = a.LowerBound(key), lb = b.LowerBound(key);
        ASSERT_TRUE(la.ok() && lb.ok()) << lb.status().ToString();
        ASSERT_EQ(*la, *lb) << "lower_bound " << key << " mode " << static_cast<int>(mode);
        ASSERT_EQ(lb->has_value(), want != native.end());
        if (want != native.end()) ASSERT_EQ(**lb, BTree::Entry(*want));
        ops += 1;
      }
    }
    ASSERT_LE(cached->counters().cache_bytes, cache.bytes) << "over budget";
  }
  // Reads after writes: the whole tree by one-sided reads.
  auto sa = a.Scan(0, UINT64_MAX), sb = b.Scan(0, UINT64_MAX);
  ASSERT_TRUE(sa.ok() && sb.ok());
  EXPECT_EQ(*sa, *sb);
  EXPECT_EQ(*sb, std::vector<BTree::Entry>(native.begin(), native.end()));
  ASSERT_TRUE(b.Validate().ok());
  // And what reached far memory is the same: drop the cache, read again.
  ASSERT_TRUE(cached->InvalidateCache().ok());
  EXPECT_EQ(cached->counters().cache_bytes, 0u);
  auto again = b.Scan(0, UINT64_MAX);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *sa);
  const ClientCounters& c = cached->counters();
  EXPECT_GT(c.cache_hits, 0u);
  EXPECT_GT(c.cache_misses, 0u);
  EXPECT_GT(c.cache_evictions, 0u) << "the budget is smaller than the tree";
  EXPECT_GT(c.cache_local_iterations, 0u) << "offloaded lookups should start on cached nodes";
  EXPECT_GT(c.offloaded, 0u);
  if (cache.write == CacheWritePolicy::kWriteBack) EXPECT_GT(c.writebacks, 0u);
  TallyOps("cache btree", ops);
}

TEST_P(DsCache, ListWithCacheMatchesWithout) {
  const CacheOptions cache = GetParam().cache;
  std::unique_ptr<Client> cached = Connect(cache);
  ASSERT_NE(cached, nullptr);
  auto la = List::Create(client_.get()), lb = List::Create(cached.get());
  ASSERT_TRUE(la.ok() && lb.ok());
  std::vector<uint64_t> native;
  std::mt19937_64 rng(9);
  uint64_t ops = 0;
  for (uint64_t op = 0; op < ScaledOps(200); ++op) {
    const uint64_t v = rng() % 500;
    if (op % 3 == 0) {
      ASSERT_TRUE((*la)->PushFront(v).ok());
      ASSERT_TRUE((*lb)->PushFront(v).ok());
      native.insert(native.begin(), v);
      ++ops;
      continue;
    }
    auto pos = std::find(native.begin(), native.end(), v);
    const std::optional<uint64_t> want =
        pos == native.end() ? std::nullopt : std::optional<uint64_t>(pos - native.begin());
    for (ExecutionMode mode : kModes) {
      (*la)->set_mode(mode);
      (*lb)->set_mode(mode);
      auto fa = (*la)->Find(v), fb = (*lb)->Find(v);
      ASSERT_TRUE(fa.ok() && fb.ok()) << fb.status().ToString();
      ASSERT_EQ(*fa, want);
      ASSERT_EQ(*fb, want) << "value " << v << " mode " << static_cast<int>(mode);
      ++ops;
    }
    ASSERT_LE(cached->counters().cache_bytes, cache.bytes);
  }
  TallyOps("cache list", ops);
}

// A write that sits dirty in the cache must reach far memory before a
// traversal that may read it is offloaded: erasing a list element in the
// middle rewrites its neighbours' links in the cache only (write-back); the
// head's block is not cached, so the Find that follows is offloaded at once
// and must already step over the erased element.
TEST_F(DsCache, DirtyWritesAreWrittenBackBeforeOffload) {
  CacheOptions cache;
  cache.bytes = 1 << 20;  // no evictions: only the flush before offload writes back
  std::unique_ptr<Client> cached = Connect(cache);
  ASSERT_NE(cached, nullptr);
  auto list = List::Create(cached.get(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(list.ok());
  std::vector<uint64_t> native;
  for (uint64_t v = 0; v < 120; ++v) {
    ASSERT_TRUE((*list)->PushBack(v).ok());
    native.push_back(v);
  }
  uint64_t checked = 0;
  for (uint64_t erase = 40; erase < 100; erase += 3) {
    ASSERT_TRUE(cached->InvalidateCache().ok());  // clean, and the head not cached
    auto e = (*list)->Erase(erase);
    ASSERT_TRUE(e.ok() && *e) << "erase " << erase;
    native.erase(std::find(native.begin(), native.end(), erase));
    const ClientCounters before = cached->counters();
    auto f = (*list)->Find(119);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_EQ(*f, std::optional<uint64_t>(native.size() - 1)) << "after erasing " << erase;
    EXPECT_EQ(cached->counters().offloaded, before.offloaded + 1);
    EXPECT_GT(cached->counters().writebacks, before.writebacks) << "dirty links not written back before offload";
    ++checked;
  }
  TallyOps("cache write-back", 120 + 2 * checked);
}

// BTree::WarmCache keeps the upper levels here: an offloaded lookup then
// runs its first iterations at the CPU node and is offloaded below them.
TEST_F(DsCache, WarmedUpperLevelsRunLocally) {
  CacheOptions cache;
  cache.bytes = 256 << 10;
  std::unique_ptr<Client> cached = Connect(cache);
  ASSERT_NE(cached, nullptr);
  auto tree = BTree::Create(cached.get(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(tree.ok());
  for (uint64_t k = 0; k < 3000; ++k) ASSERT_TRUE((*tree)->Insert(k, k + 5).ok());
  ASSERT_GE((*tree)->height(), 3u);
  ASSERT_TRUE(cached->InvalidateCache().ok());
  auto warmed = (*tree)->WarmCache((*tree)->height() - 1);
  ASSERT_TRUE(warmed.ok());
  EXPECT_GT(*warmed, 0u);
  // (A leaf whose 256-byte blocks both hold parts of warmed nodes is
  // cached by accident; most are not.)
  uint64_t finds = 0, offloaded = 0;
  for (uint64_t k = 0; k < 3000; k += 37) {
    const ClientCounters before = cached->counters();
    auto f = (*tree)->Find(k);
    ASSERT_TRUE(f.ok());
    ASSERT_EQ(*f, std::optional<uint64_t>(k + 5));
    EXPECT_GE(cached->counters().cache_local_iterations - before.cache_local_iterations, (*tree)->height() - 1)
        << "the warmed levels run here";
    ++finds;
    offloaded += cached->counters().offloaded - before.offloaded;
  }
  EXPECT_GT(offloaded, finds / 2) << "the leaf level is offloaded";
  TallyOps("cache warm", 3000 + 82);
}

TEST_F(DsCache, BadCacheOptionsAreRejected) {
  ClientOptions options = RackClientOptions();
  options.cache.bytes = 1 << 20;
  options.cache.object_bytes = 300;
  auto c = Client::Connect(options);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("power of two"), std::string::npos) << c.status().ToString();
}

CacheOptions Make(CacheGranularity g, CacheEviction e, CacheWritePolicy w, uint64_t bytes) {
  CacheOptions c;
  c.bytes = bytes;
  c.granularity = g;
  c.eviction = e;
  c.write = w;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Policies, DsCache,
    ::testing::Values(
        CacheCase{"object_lru_writeback",
                  Make(CacheGranularity::kObject, CacheEviction::kLru, CacheWritePolicy::kWriteBack, 16 << 10)},
        CacheCase{"object_clock_writethrough",
                  Make(CacheGranularity::kObject, CacheEviction::kClock, CacheWritePolicy::kWriteThrough, 16 << 10)},
        CacheCase{"page_clock_writeback",
                  Make(CacheGranularity::kPage, CacheEviction::kClock, CacheWritePolicy::kWriteBack, 12 << 10)},
        CacheCase{"page_lru_writethrough",
                  Make(CacheGranularity::kPage, CacheEviction::kLru, CacheWritePolicy::kWriteThrough, 12 << 10)}),
    [](const ::testing::TestParamInfo<CacheCase>& info) { return info.param.name; });

}  // namespace
}  // namespace pulse::ds::testing
