// The write buffer and page cache under FarLock holds (LockTierOptions,
// src/client/lock_tier.h, docs/tier.md) on a real cluster: several CPU nodes
// take one lock and do random small writes and reads of far memory under
// it, against a byte map replayed in lock order; what the buffer holds is
// invisible to others until release and visible after it; flushes at the
// buffer's size; a holder that dies loses what it buffered; the switches.
// With $PULSE_RACK set the memory nodes run as two racks (DsCluster).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "pulse/client.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/lock.h"
#include "support/ds_cluster.h"

namespace pulse::ds::testing {
namespace {

using namespace std::chrono_literals;

constexpr size_t kChunk = 1024;  // bytes per allocation
constexpr int kChunks = 4;       // spread over both memory nodes

class LockTierCluster : public DsCluster {
 protected:
  // Small buffers and cache pages, so flushes at size, merging and page
  // eviction all happen at test scale.
  ClientOptions Options(bool buffer = true, bool cache = true) const {
    ClientOptions o = RackClientOptions();
    o.lock_tier.write_buffer = buffer;
    o.lock_tier.write_buffer_bytes = 512;
    o.lock_tier.page_cache = cache;
    o.lock_tier.cache_page_bytes = 256;
    o.lock_tier.cache_pages = 6;
    return o;
  }
  // kChunks allocations of the tenant, made by client_, zeroed.
  void AllocateRegion() {
    for (int i = 0; i < kChunks; ++i) {
      auto a = client_->Allocate(kChunk);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      std::vector<uint8_t> zero(kChunk, 0);
      ASSERT_TRUE(client_->Write(*a, zero.data(), kChunk).ok());
      chunks_.push_back(*a);
    }
  }
  // The region, two CPU nodes with these options, and a lock the first
  // one created (null members after a failure, which is reported).
  struct TwoNodes {
    std::unique_ptr<Client> first, second;
    std::unique_ptr<FarLock> lock;
  };
  TwoNodes RegionAndTwoNodes(const ClientOptions& first, const ClientOptions& second,
                             const FarLockOptions& lock_options = {}) {
    TwoNodes t;
    AllocateRegion();
    t.first = ConnectClient(first);
    t.second = ConnectClient(second);
    if (t.first == nullptr || t.second == nullptr) return {};
    auto lock = FarLock::Create(t.first.get(), lock_options);
    EXPECT_TRUE(lock.ok()) << lock.status().ToString();
    if (lock.ok()) t.lock = std::move(*lock);
    return t;
  }
  std::vector<uint64_t> chunks_;
};

// Reads [addr, addr + len) with `c` and compares it with `ref` (a missing
// byte is 0).
::testing::AssertionResult ReadsAsReference(Client& c, uint64_t addr, size_t len,
                                            const std::map<uint64_t, uint8_t>& ref) {
  std::vector<uint8_t> got(len);
  if (Status s = c.Read(addr, got.data(), len); !s.ok()) return ::testing::AssertionFailure() << s.ToString();
  for (size_t i = 0; i < len; ++i) {
    auto it = ref.find(addr + i);
    const uint8_t want = it == ref.end() ? 0 : it->second;
    if (got[i] != want)
      return ::testing::AssertionFailure() << "byte " << std::hex << addr + i << std::dec << " is " << int(got[i])
                                           << ", the reference says " << int(want);
  }
  return ::testing::AssertionSuccess();
}

// Three CPU nodes, one FarLock: exclusive holds do random small writes
// (buffered), some large ones (straight to far memory, writing the
// buffered bytes they touch out first) and reads (which must see the
// buffer); shared holds do reads, repeatedly on a few pages so the page
// cache admits them.  The holders are serialised by the lock, so the
// reference byte map is the lock order's replay: every read under a hold
// must equal it, so a shared hold never sees a value older than the last
// release.  Afterwards a fresh client reads the whole region.
TEST_F(LockTierCluster, RandomWritesAndReadsUnderOneLockMatchAByteMapReplayedInLockOrder) {
  AllocateRegion();
  auto lock = FarLock::Create(client_.get());
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  const uint64_t lock_addr = (*lock)->address();
  std::mutex mu;  // for memory safety only: the FarLock orders the holders
  std::map<uint64_t, uint8_t> ref;
  const uint64_t holds = ScaledOps(40);
  std::atomic<uint64_t> buffered{0}, flushes{0}, buffer_reads{0}, cache_hits{0}, exclusive_holds{0};

  auto cpu_node = [&](int id) {
    std::unique_ptr<Client> c = ConnectClient(Options());
    ASSERT_NE(c, nullptr);
    auto l = FarLock::Attach(c.get(), lock_addr, {.lease = 60s});
    std::mt19937_64 rng(7 + id);
    auto random_range = [&](size_t max_len) {
      const uint64_t chunk = chunks_[rng() % chunks_.size()];
      const size_t len = 1 + rng() % max_len;
      const uint64_t off = rng() % (kChunk - len + 1);
      return std::make_pair(chunk + off, len);
    };
    for (uint64_t h = 0; h < holds; ++h) {
      const bool exclusive = rng() % 3 != 0;
      auto guard = exclusive ? FarLockGuard::Exclusive(*l, 60s) : FarLockGuard::Shared(*l, 60s);
      ASSERT_TRUE(guard.ok()) << guard.status().ToString();
      std::lock_guard<std::mutex> g(mu);
      if (exclusive) {
        ++exclusive_holds;
        for (int op = 0; op < 24; ++op) {
          const int kind = static_cast<int>(rng() % 10);
          if (kind < 6) {  // small: buffered
            auto [addr, len] = random_range(200);
            std::vector<uint8_t> v(len);
            for (auto& x : v) x = static_cast<uint8_t>(rng() | 1);
            ASSERT_TRUE(c->Write(addr, v.data(), len).ok());
            for (size_t i = 0; i < len; ++i) ref[addr + i] = v[i];
          } else if (kind == 6) {  // large: not buffered
            const size_t len = 256 + rng() % (kChunk - 256 + 1);
            const uint64_t addr = chunks_[rng() % chunks_.size()] + rng() % (kChunk - len + 1);
            std::vector<uint8_t> v(len);
            for (auto& x : v) x = static_cast<uint8_t>(rng());
            ASSERT_TRUE(c->Write(addr, v.data(), len).ok());
            for (size_t i = 0; i < len; ++i) ref[addr + i] = v[i];
          } else {  // reads see the buffer
            auto [addr, len] = random_range(300);
            ASSERT_TRUE(ReadsAsReference(*c, addr, len, ref)) << "client " << id << " exclusive hold " << h;
          }
        }
      } else {
        // A few pages, read again and again: some become read-hot.
        const uint64_t base = chunks_[rng() % chunks_.size()];
        for (int op = 0; op < 24; ++op) {
          const uint64_t addr = base + (rng() % 3) * 256 + rng() % 200;
          const size_t len = 1 + rng() % 56;
          ASSERT_TRUE(ReadsAsReference(*c, addr, len, ref)) << "client " << id << " shared hold " << h;
        }
      }
      // The guard releases after `g`: the reference is the released state.
    }
    const ClientCounters& k = c->counters();
    buffered += k.lock_buffered_writes;
    flushes += k.lock_buffer_flushes;
    buffer_reads += k.lock_buffer_reads;
    cache_hits += k.lock_cache_hits;
    EXPECT_EQ(k.lock_buffer_dropped_bytes, 0u);
  };
  std::vector<std::thread> threads;
  for (int id = 0; id < 3; ++id) threads.emplace_back(cpu_node, id);
  for (auto& t : threads) t.join();

  // Every write of every hold reached far memory.
  std::unique_ptr<Client> fresh = ConnectClient(Options(false, false));
  ASSERT_NE(fresh, nullptr);
  for (uint64_t chunk : chunks_) EXPECT_TRUE(ReadsAsReference(*fresh, chunk, kChunk, ref));
  EXPECT_GT(exclusive_holds.load(), 0u);
  EXPECT_GT(buffered.load(), 0u);
  EXPECT_GT(flushes.load(), 0u);
  EXPECT_GT(cache_hits.load(), 0u) << "read-hot pages should have been cached under shared holds";
}

// Buffered writes stay at the holder until release (another CPU node reading
// without the lock still sees the old bytes, and no one-sided write left);
// the holder's reads see them, a read the buffer covers needs no far read;
// after release everyone sees them.
TEST_F(LockTierCluster, BufferedWritesLeaveAtReleaseAndTheHolderReadsThemBefore) {
  TwoNodes t = RegionAndTwoNodes(Options(), Options(false, false));
  ASSERT_NE(t.lock, nullptr);
  Client& writer = *t.first;
  Client& other = *t.second;
  FarLock* lock = t.lock.get();
  ASSERT_TRUE(lock->LockExclusive(10s).ok());
  const uint64_t addr = chunks_[1] + 40;
  uint8_t v[16];
  std::memset(v, 0xab, sizeof v);
  const uint64_t writes_before = writer.counters().remote_writes;
  ASSERT_TRUE(writer.Write(addr, v, sizeof v).ok());
  EXPECT_EQ(writer.counters().lock_buffered_writes, 1u);
  EXPECT_EQ(writer.counters().remote_writes, writes_before) << "a buffered write sends nothing";
  uint8_t got[16] = {};
  ASSERT_TRUE(writer.Read(addr, got, sizeof got).ok());
  EXPECT_EQ(0, std::memcmp(got, v, sizeof v));
  EXPECT_EQ(writer.counters().lock_buffer_reads, 1u);
  uint8_t wider[32] = {};
  ASSERT_TRUE(writer.Read(addr - 8, wider, sizeof wider).ok());  // far bytes around the buffered ones
  EXPECT_EQ(wider[7], 0);
  EXPECT_EQ(wider[8], 0xab);
  EXPECT_EQ(wider[23], 0xab);
  EXPECT_EQ(wider[24], 0);
  ASSERT_TRUE(other.Read(addr, got, sizeof got).ok());
  EXPECT_EQ(got[0], 0) << "another CPU node sees the write before release: it was not buffered";
  ASSERT_TRUE(lock->Unlock().ok());
  EXPECT_EQ(writer.counters().lock_buffer_flushes, 1u);
  ASSERT_TRUE(other.Read(addr, got, sizeof got).ok());
  EXPECT_EQ(0, std::memcmp(got, v, sizeof v)) << "release must write the buffer out";
}

// With buffer_bytes 512 and 16-byte writes 32 bytes apart, the 32nd write
// starts a flush; the 64th waits for that one and starts the next.  So
// after 64 writes under the hold the first 32 are in far memory.
TEST_F(LockTierCluster, AFlushStartsAtTheBufferSizeAndTheNextWaitsForIt) {
  TwoNodes t = RegionAndTwoNodes(Options(), Options(false, false));
  ASSERT_NE(t.lock, nullptr);
  Client& writer = *t.first;
  Client& other = *t.second;
  FarLock* lock = t.lock.get();
  ASSERT_TRUE(lock->LockExclusive(10s).ok());
  uint8_t v[16];
  for (int i = 0; i < 64; ++i) {
    std::memset(v, i + 1, sizeof v);
    ASSERT_TRUE(writer.Write(chunks_[i / 32] + (i % 32) * 32, v, sizeof v).ok());
    EXPECT_EQ(writer.counters().lock_buffer_flushes, static_cast<uint64_t>((i + 1) / 32)) << "after write " << i;
  }
  for (int i = 0; i < 32; ++i) {
    uint8_t got[16];
    ASSERT_TRUE(other.Read(chunks_[0] + i * 32, got, sizeof got).ok());
    EXPECT_EQ(got[0], i + 1) << "write " << i << " of the first batch";
  }
  ASSERT_TRUE(lock->Unlock().ok());
  EXPECT_EQ(writer.counters().lock_buffer_flushes, 2u) << "nothing was left for the release";
  EXPECT_EQ(writer.counters().lock_buffer_flushed_bytes, 64u * 16);
  EXPECT_EQ(writer.counters().lock_buffer_flush_writes, 64u);
}

// A holder that dies with writes buffered loses them, as it would lose a
// write it never sent: the next holder (after the lease) sees the old bytes.
TEST_F(LockTierCluster, AHolderThatDiesLosesWhatItBuffered) {
  TwoNodes t = RegionAndTwoNodes(Options(), Options(), {.lease = 300ms});
  ASSERT_NE(t.lock, nullptr);
  Client& writer = *t.first;
  Client& next = *t.second;
  FarLock* lock = t.lock.get();
  ASSERT_TRUE(lock->LockExclusive(10s).ok());
  uint8_t v[8];
  std::memset(v, 0x77, sizeof v);
  ASSERT_TRUE(writer.Write(chunks_[2], v, sizeof v).ok());
  lock->Forget();
  EXPECT_EQ(writer.counters().lock_buffer_dropped_bytes, 8u);
  auto l2 = FarLock::Attach(&next, lock->address(), {.lease = 300ms});
  ASSERT_TRUE(l2->LockExclusive(20s).ok());
  uint8_t got[8];
  ASSERT_TRUE(next.Read(chunks_[2], got, sizeof got).ok());
  EXPECT_EQ(got[0], 0);
  ASSERT_TRUE(l2->Unlock().ok());
}

// The switches: no buffer, every write goes at once; no page cache, no hits.
TEST_F(LockTierCluster, SwitchedOffNothingIsBufferedOrCached) {
  TwoNodes t = RegionAndTwoNodes(Options(false, false), Options(false, false));
  ASSERT_NE(t.lock, nullptr);
  Client& c = *t.first;
  Client& other = *t.second;
  FarLock* lock = t.lock.get();
  ASSERT_TRUE(lock->LockExclusive(10s).ok());
  uint8_t v[8], got[8];
  std::memset(v, 0x42, sizeof v);
  ASSERT_TRUE(c.Write(chunks_[0], v, sizeof v).ok());
  ASSERT_TRUE(other.Read(chunks_[0], got, sizeof got).ok());
  EXPECT_EQ(got[0], 0x42);
  ASSERT_TRUE(lock->Unlock().ok());
  ASSERT_TRUE(lock->LockShared(10s).ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.Read(chunks_[0], got, sizeof got).ok());
  ASSERT_TRUE(lock->Unlock().ok());
  EXPECT_EQ(c.counters().lock_buffered_writes, 0u);
  EXPECT_EQ(c.counters().lock_cache_hits + c.counters().lock_cache_misses, 0u);
}

// Under a shared hold a page read often enough (H_p = 4: the 5th read) is
// cached and then served here; another CPU node's write under an exclusive
// hold after the release is seen by the next shared hold, never the cached
// bytes.
TEST_F(LockTierCluster, ReadHotPagesAreCachedUnderASharedHoldAndDroppedAtRelease) {
  TwoNodes t = RegionAndTwoNodes(Options(), Options());
  ASSERT_NE(t.lock, nullptr);
  Client& reader = *t.first;
  Client& writer = *t.second;
  FarLock* lock = t.lock.get();
  auto wl = FarLock::Attach(&writer, lock->address());
  uint8_t got[8];
  ASSERT_TRUE(lock->LockShared(10s).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(reader.Read(chunks_[3] + 8, got, sizeof got).ok());
  EXPECT_EQ(reader.counters().lock_cache_misses, 5u) << "admitted on the 5th read";
  EXPECT_EQ(reader.counters().lock_cache_hits, 5u);
  ASSERT_TRUE(lock->Unlock().ok());
  ASSERT_TRUE(wl->LockExclusive(10s).ok());
  uint8_t v[8];
  std::memset(v, 0x99, sizeof v);
  ASSERT_TRUE(writer.Write(chunks_[3] + 8, v, sizeof v).ok());
  ASSERT_TRUE(wl->Unlock().ok());
  ASSERT_TRUE(lock->LockShared(10s).ok());
  ASSERT_TRUE(reader.Read(chunks_[3] + 8, got, sizeof got).ok());
  EXPECT_EQ(got[0], 0x99) << "the page cache served bytes older than the last release";
  ASSERT_TRUE(lock->Unlock().ok());
}

// A structure changed under an exclusive hold and searched by offloaded
// traversals in the same hold: the memory nodes run them over far memory,
// so the buffered writes must be out first (Client::TraverseAsync writes
// the buffer out before offloading).  Another CPU node then finds every key
// under a shared hold.
TEST_F(LockTierCluster, OffloadedTraversalsUnderTheHoldSeeTheBufferedWrites) {
  std::unique_ptr<Client> writer = ConnectClient(Options());
  std::unique_ptr<Client> reader = ConnectClient(Options());
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  // The whole tree on memory node 1 (rack b when racked: the writer's is a),
  // so its small writes (the redo log's, beside the header) go over the
  // fabric and are buffered under the hold.
  auto tree = BTree::Create(writer.get(), {.mode = ExecutionMode::kOffload,
                                           .partition = BTreePartition{.split_key = 0, .low_node = 1, .high_node = 1}});
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  auto lock = FarLock::Create(writer.get());
  ASSERT_TRUE(lock.ok());
  ASSERT_TRUE((*lock)->LockExclusive(10s).ok());
  constexpr uint64_t kKeys = 200;
  for (uint64_t k = 0; k < kKeys; ++k) {
    auto inserted = (*tree)->Insert(k * 7, k);
    ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
    auto found = (*tree)->Find(k * 7);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    ASSERT_EQ(found->value_or(UINT64_MAX), k) << "key " << k * 7 << " right after its insert";
  }
  const ClientCounters& w = writer->counters();
  EXPECT_GT(w.lock_buffered_writes, 0u);
  EXPECT_GT(w.lock_buffer_flushes, 0u) << "offloads must have written the buffer out";
  EXPECT_GT(w.offloaded, 0u);
  ASSERT_TRUE((*lock)->Unlock().ok());
  auto view = BTree::Open(reader.get(), (*tree)->header_address(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  auto rl = FarLock::Attach(reader.get(), (*lock)->address());
  ASSERT_TRUE(rl->LockShared(10s).ok());
  ASSERT_TRUE((*view)->Refresh().ok());
  for (uint64_t k = 0; k < kKeys; ++k) {
    auto found = (*view)->Find(k * 7);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(found->value_or(UINT64_MAX), k) << "key " << k * 7;
  }
  ASSERT_TRUE(rl->Unlock().ok());
}

}  // namespace
}  // namespace pulse::ds::testing
