// BlockCache over a plain byte array standing in for far memory: random
// reads and writes against the array itself (the reference), for both block
// sizes, both eviction policies and both write policies; the budget holds;
// LRU and CLOCK evict what they should.
#include "client/cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace pulse {
namespace {

constexpr uint64_t kBase = uint64_t{1} << 40;

// Far memory: kBase .. kBase + size; counts the accesses that reach it.
struct FakeFar {
  std::vector<uint8_t> bytes;
  uint64_t fetches = 0, stores = 0;
  explicit FakeFar(size_t size) : bytes(size) {}
  Status Fetch(uint64_t addr, void* dst, size_t len) {
    if (addr < kBase || addr + len > kBase + bytes.size()) return Status::InvalidArgument("outside");
    ++fetches;
    std::memcpy(dst, bytes.data() + (addr - kBase), len);
    return Status::Ok();
  }
  Status Store(uint64_t addr, const void* src, size_t len) {
    if (addr < kBase || addr + len > kBase + bytes.size()) return Status::InvalidArgument("outside");
    ++stores;
    std::memcpy(bytes.data() + (addr - kBase), src, len);
    return Status::Ok();
  }
};

struct CacheSetup {
  CacheGranularity granularity;
  CacheEviction eviction;
  CacheWritePolicy write;
};

class BlockCacheTest : public ::testing::TestWithParam<CacheSetup> {
 protected:
  // The parameter's policies, 8 KiB of budget.
  static CacheOptions Options() {
    CacheOptions options;
    options.bytes = 8 * 1024;
    options.granularity = GetParam().granularity;
    options.eviction = GetParam().eviction;
    options.write = GetParam().write;
    return options;
  }
};

TEST_P(BlockCacheTest, RandomAccessesMatchAPlainArray) {
  const CacheSetup p = GetParam();
  FakeFar far(1 << 16);
  std::vector<uint8_t> reference(far.bytes.size());  // what far memory must read as
  const CacheOptions options = Options();
  ClientCounters counters;
  BlockCache cache(
      options, [&](uint64_t a, void* d, size_t n) { return far.Fetch(a, d, n); },
      [&](uint64_t a, const void* s, size_t n) { return far.Store(a, s, n); }, &counters);
  ASSERT_TRUE(cache.enabled());
  std::mt19937_64 rng(3);
  for (int op = 0; op < 20000; ++op) {
    // Mostly a hot region that fits the budget, sometimes anywhere.
    const uint64_t span = rng() % 4 ? 6 * 1024 - 512 : reference.size() - 600;
    const uint64_t off = rng() % span, len = 1 + rng() % 512;
    if (rng() % 3 == 0) {
      std::vector<uint8_t> data(len);
      for (auto& b : data) b = static_cast<uint8_t>(rng());
      ASSERT_TRUE(cache.Write(kBase + off, data.data(), len).ok());
      std::memcpy(reference.data() + off, data.data(), len);
    } else {
      std::vector<uint8_t> got(len);
      ASSERT_TRUE(cache.Read(kBase + off, got.data(), len).ok());
      ASSERT_EQ(0, std::memcmp(got.data(), reference.data() + off, len)) << "read at " << off << " op " << op;
    }
    ASSERT_LE(counters.cache_bytes, options.bytes);
  }
  EXPECT_GT(counters.cache_hits, counters.cache_misses);
  EXPECT_GT(counters.cache_evictions, 0u);
  if (p.write == CacheWritePolicy::kWriteThrough) {
    EXPECT_EQ(far.bytes, reference) << "write-through leaves far memory current";
    EXPECT_EQ(counters.writebacks, 0u);
  } else {
    EXPECT_GT(counters.writebacks, 0u);
  }
  ASSERT_TRUE(cache.Flush().ok());
  EXPECT_FALSE(cache.has_dirty());
  EXPECT_EQ(far.bytes, reference);
  ASSERT_TRUE(cache.Invalidate().ok());
  EXPECT_EQ(counters.cache_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, BlockCacheTest,
    ::testing::Values(CacheSetup{CacheGranularity::kObject, CacheEviction::kLru, CacheWritePolicy::kWriteBack},
                      CacheSetup{CacheGranularity::kObject, CacheEviction::kClock, CacheWritePolicy::kWriteThrough},
                      CacheSetup{CacheGranularity::kPage, CacheEviction::kClock, CacheWritePolicy::kWriteBack},
                      CacheSetup{CacheGranularity::kPage, CacheEviction::kLru, CacheWritePolicy::kWriteThrough}));

// The client's network handlers run while its fetch or store waits in the
// fabric (Worker::Get/Put progress it), and the answer of a STORE-bearing
// traversal invalidates the cache from there (TraversalTracker ->
// StoresDone).  Here the fetch and store hooks do that: now and then the
// "memory node" changes bytes of its own region of far memory and calls
// Invalidate() from inside the cache's own access, where, as in a handler,
// a further fetch or store fails (a blocking call from a handler).
// Random reads and writes of random sizes, crossing block boundaries, must
// still match a plain array, the node's bytes included.
TEST_P(BlockCacheTest, InvalidateFromInsideAFetchOrStoreKeepsTheCacheCorrect) {
  FakeFar far(1 << 16);
  const size_t node_region = 48 * 1024;  // [0, 48K) the client's writes, [48K, 64K) the node's
  std::vector<uint8_t> reference(far.bytes.size());
  const CacheOptions options = Options();
  ClientCounters counters;
  std::mt19937_64 rng(11);
  BlockCache* cache = nullptr;
  bool in_handler = false;
  uint64_t invalidations = 0;
  // What a handler does: the node's STORE, then the invalidation.
  auto handler = [&] {
    if (in_handler || rng() % 4 != 0) return;
    in_handler = true;
    for (int i = 0; i < 8; ++i) {
      const size_t at = node_region + rng() % (far.bytes.size() - node_region);
      far.bytes[at] = reference[at] = static_cast<uint8_t>(rng());
    }
    ASSERT_TRUE(cache->Invalidate().ok());
    ++invalidations;
    in_handler = false;
  };
  BlockCache c(
      options,
      [&](uint64_t a, void* d, size_t n) {
        if (in_handler) return Status::InvalidArgument("Get: blocking call from inside a pulse::net handler");
        handler();
        return far.Fetch(a, d, n);
      },
      [&](uint64_t a, const void* s, size_t n) {
        if (in_handler) return Status::InvalidArgument("Put: blocking call from inside a pulse::net handler");
        handler();
        return far.Store(a, s, n);
      },
      &counters);
  cache = &c;
  for (int op = 0; op < 5000; ++op) {
    const uint64_t len = 1 + rng() % 6000;  // up to two page boundaries
    if (rng() % 2 == 0) {
      const uint64_t off = rng() % (node_region - len);
      std::vector<uint8_t> data(len);
      for (auto& b : data) b = static_cast<uint8_t>(rng());
      ASSERT_TRUE(c.Write(kBase + off, data.data(), len).ok()) << "op " << op;
      std::memcpy(reference.data() + off, data.data(), len);
    } else {
      const uint64_t off = rng() % (reference.size() - len);
      std::vector<uint8_t> got(len);
      const uint64_t before = invalidations;
      ASSERT_TRUE(c.Read(kBase + off, got.data(), len).ok()) << "op " << op;
      // A node's STORE during the read may come after the read copied its
      // bytes (either value is right): then the node's bytes are left out.
      const uint64_t checked = invalidations == before ? len : std::min(len, node_region - std::min(off, node_region));
      ASSERT_EQ(0, std::memcmp(got.data(), reference.data() + off, checked)) << "read at " << off << " op " << op;
    }
    ASSERT_LE(counters.cache_bytes, options.bytes);
  }
  EXPECT_GT(invalidations, 100u);
  ASSERT_TRUE(c.Flush().ok());
  EXPECT_FALSE(c.has_dirty());
  EXPECT_EQ(far.bytes, reference);
  ASSERT_TRUE(c.Invalidate().ok());
  EXPECT_EQ(counters.cache_bytes, 0u);
}

// Three blocks of budget.  LRU: after touching A again, D evicts B.
// CLOCK: every block referenced, the hand sweeps once and evicts A (the
// oldest slot); a block touched since the sweep survives the next eviction.
TEST(BlockCache, LruAndClockEvictTheRightBlocks) {
  for (CacheEviction policy : {CacheEviction::kLru, CacheEviction::kClock}) {
    FakeFar far(1 << 16);
    CacheOptions options;
    options.bytes = 3 * 256;
    options.eviction = policy;
    ClientCounters counters;
    BlockCache cache(
        options, [&](uint64_t a, void* d, size_t n) { return far.Fetch(a, d, n); },
        [&](uint64_t a, const void* s, size_t n) { return far.Store(a, s, n); }, &counters);
    uint8_t byte;
    auto touch = [&](int block) { ASSERT_TRUE(cache.Read(kBase + block * 256, &byte, 1).ok()); };
    auto cached = [&](int block) { return cache.ReadIfCached(kBase + block * 256, &byte, 1); };
    touch(0);
    touch(1);
    touch(2);
    touch(0);
    touch(3);  // evicts one
    EXPECT_TRUE(cached(3));
    if (policy == CacheEviction::kLru) {
      EXPECT_TRUE(cached(0));
      EXPECT_FALSE(cached(1)) << "LRU evicts the least recently used";
      EXPECT_TRUE(cached(2));
    } else {
      EXPECT_FALSE(cached(0)) << "CLOCK: all referenced, the hand comes back to slot 0";
      EXPECT_TRUE(cached(1));
      EXPECT_TRUE(cached(2));
    }
    EXPECT_EQ(counters.cache_evictions, 1u);
  }
}

// A block that cannot be fetched (past the end of far memory) is not
// cached; the bytes that exist are read directly.
TEST(BlockCache, UnfetchableBlocksFallBackToDirectAccess) {
  FakeFar far(1000);  // the last 4 KiB page is incomplete
  for (size_t i = 0; i < far.bytes.size(); ++i) far.bytes[i] = static_cast<uint8_t>(i);
  CacheOptions options;
  options.bytes = 16 * 1024;
  options.granularity = CacheGranularity::kPage;
  ClientCounters counters;
  BlockCache cache(
      options, [&](uint64_t a, void* d, size_t n) { return far.Fetch(a, d, n); },
      [&](uint64_t a, const void* s, size_t n) { return far.Store(a, s, n); }, &counters);
  uint8_t got[10];
  ASSERT_TRUE(cache.Read(kBase + 990, got, 10).ok());
  EXPECT_EQ(got[0], static_cast<uint8_t>(990));
  EXPECT_EQ(counters.cache_bytes, 0u);
  EXPECT_FALSE(cache.Read(kBase + 995, got, 10).ok()) << "past the end is an error";
  const uint8_t w = 7;
  ASSERT_TRUE(cache.Write(kBase + 5, &w, 1).ok());
  EXPECT_EQ(far.bytes[5], 7);
}

// Write-back writes back only the bytes written: bytes of the block that
// changed in far memory meanwhile (another CPU node's data, under another
// lock) are left as they are, for random writes in both block sizes.
TEST(BlockCache, WriteBackLeavesUnwrittenBytesOfTheBlockAlone) {
  for (CacheGranularity g : {CacheGranularity::kObject, CacheGranularity::kPage}) {
    FakeFar far(1 << 14);
    CacheOptions options;
    options.bytes = 1 << 14;
    options.granularity = g;
    ClientCounters counters;
    BlockCache cache(
        options, [&](uint64_t a, void* d, size_t n) { return far.Fetch(a, d, n); },
        [&](uint64_t a, const void* s, size_t n) { return far.Store(a, s, n); }, &counters);
    std::mt19937_64 rng(static_cast<int>(g) + 3);
    std::vector<uint8_t> want(far.bytes.size(), 0);
    for (int round = 0; round < 50; ++round) {
      std::vector<bool> mine(far.bytes.size(), false);
      for (int w = 0; w < 8; ++w) {  // this client's writes, kept in the cache
        const size_t at = rng() % (far.bytes.size() - 64), n = 1 + rng() % 64;
        std::vector<uint8_t> v(n);
        for (uint8_t& x : v) x = static_cast<uint8_t>(rng());
        ASSERT_TRUE(cache.Write(kBase + at, v.data(), n).ok());
        std::copy(v.begin(), v.end(), want.begin() + static_cast<long>(at));
        std::fill_n(mine.begin() + static_cast<long>(at), n, true);
      }
      for (size_t i = 0; i < far.bytes.size(); ++i) {  // someone else's, straight to far memory
        if (mine[i] || rng() % 4 != 0) continue;
        far.bytes[i] = want[i] = static_cast<uint8_t>(rng());
      }
      ASSERT_TRUE(cache.Invalidate().ok());
      ASSERT_EQ(far.bytes, want) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace pulse
