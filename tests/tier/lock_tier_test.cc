// The client's lock tier (src/client/lock_tier.h) over a fake far memory:
// posted writes wait in a queue until the tier waits for them, so the flush
// rules can be watched step by step (a flush at the buffer's size is posted,
// not waited for; the next one waits for it first; release writes out
// everything), failures of a flush, a holder that is gone, and the page
// cache's admission of read-hot blocks and its drops.  No processes.
#include "client/lock_tier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <vector>

namespace pulse {
namespace {

// Far memory of 8 KiB at address 0; reads and writes counted; posted
// writes land when the tier waits.
struct FakeFar {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(8192, 0);
  struct Posted {
    uint64_t addr;
    std::vector<uint8_t> data;
  };
  std::deque<Posted> queue;
  int reads = 0, writes = 0, posts = 0, waits = 0;
  Status fail_post, fail_wait;  // returned by the next post / wait, once

  LockTier::Far Bind() {
    return LockTier::Far{
        .read = [this](uint64_t a, void* dst, size_t n) {
          ++reads;
          std::memcpy(dst, bytes.data() + a, n);
          return Status::Ok();
        },
        .write = [this](uint64_t a, const void* src, size_t n) {
          ++writes;
          std::memcpy(bytes.data() + a, src, n);
          return Status::Ok();
        },
        .post = [this](uint64_t a, const void* src, size_t n, std::shared_ptr<const void>) {
          if (!fail_post.ok()) return std::exchange(fail_post, Status::Ok());
          ++posts;
          const auto* p = static_cast<const uint8_t*>(src);
          queue.push_back({a, std::vector<uint8_t>(p, p + n)});
          return Status::Ok();
        },
        .wait = [this] {
          ++waits;
          for (const Posted& p : queue) std::memcpy(bytes.data() + p.addr, p.data.data(), p.data.size());
          queue.clear();
          return std::exchange(fail_wait, Status::Ok());
        },
    };
  }
  uint8_t at(uint64_t a) const { return bytes[a]; }
};

LockTierOptions Small() {
  LockTierOptions o;
  o.write_buffer_bytes = 32;
  o.cache_page_bytes = 256;
  o.cache_pages = 2;
  return o;
}

Status WriteByte(LockTier& t, uint64_t addr, uint8_t v, size_t n = 16) {
  std::vector<uint8_t> bytes(n, v);
  return t.Buffer(addr, bytes.data(), n);
}

TEST(LockTier, AFlushAtTheSizeIsPostedAndTheNextWaitsForItFirst) {
  FakeFar far;
  ClientCounters k;
  LockTier t(Small(), {}, far.Bind(), &k);
  t.Enter(/*exclusive=*/true);
  EXPECT_TRUE(t.BuffersWrite(255));
  EXPECT_FALSE(t.BuffersWrite(256));
  ASSERT_TRUE(WriteByte(t, 0, 1).ok());
  EXPECT_EQ(far.posts, 0);
  ASSERT_TRUE(WriteByte(t, 100, 2).ok());  // 32 bytes: due
  EXPECT_EQ(far.posts, 2);
  EXPECT_EQ(far.waits, 0) << "a flush at the size does not wait";
  EXPECT_EQ(far.at(0), 0) << "not landed yet";
  ASSERT_TRUE(WriteByte(t, 200, 3).ok());
  ASSERT_TRUE(WriteByte(t, 300, 4).ok());  // due again: the first batch must land first
  EXPECT_EQ(far.waits, 1);
  EXPECT_EQ(far.at(0), 1);
  EXPECT_EQ(far.at(100), 2);
  EXPECT_EQ(far.posts, 4);
  ASSERT_TRUE(WriteByte(t, 400, 5).ok());
  ASSERT_TRUE(t.Leave(true).ok());  // everything, waited for
  EXPECT_EQ(far.at(200), 3);
  EXPECT_EQ(far.at(300), 4);
  EXPECT_EQ(far.at(400), 5);
  EXPECT_TRUE(far.queue.empty());
  EXPECT_EQ(k.lock_buffered_writes, 5u);
  EXPECT_EQ(k.lock_buffer_flushes, 3u);
  EXPECT_EQ(k.lock_buffer_flush_writes, 5u);
  EXPECT_EQ(k.lock_buffer_flushed_bytes, 80u);
  EXPECT_FALSE(t.holding());
  EXPECT_FALSE(t.BuffersWrite(8)) << "no hold, no buffering";
}

TEST(LockTier, ReadsSeeTheBufferAndACoveredReadReadsNoFarMemory) {
  FakeFar far;
  far.bytes[15] = 0x33;
  far.bytes[40] = 0x44;
  ClientCounters k;
  LockTier t(Small(), {}, far.Bind(), &k);
  t.Enter(true);
  ASSERT_TRUE(WriteByte(t, 16, 7, 8).ok());
  uint8_t got[8];
  ASSERT_TRUE(t.Read(16, got, 8).ok());
  EXPECT_EQ(far.reads, 0);
  EXPECT_EQ(got[0], 7);
  EXPECT_EQ(k.lock_buffer_reads, 1u);
  uint8_t wide[30];
  ASSERT_TRUE(t.Read(15, wide, 30).ok());
  EXPECT_EQ(far.reads, 1);
  EXPECT_EQ(wide[0], 0x33);
  EXPECT_EQ(wide[1], 7);
  EXPECT_EQ(wide[8], 7);
  EXPECT_EQ(wide[9], 0);
  EXPECT_EQ(wide[25], 0x44);
  // An unbuffered write touching buffered bytes writes them out first.
  ASSERT_TRUE(t.BeforeWrite(20, 300).ok());
  EXPECT_EQ(far.at(16), 7);
  EXPECT_FALSE(t.Overlaps(0, 1000));
  ASSERT_TRUE(t.Leave(true).ok());
}

TEST(LockTier, AFailedFlushFailsTheReleaseAndItsBytesAreCountedAsDropped) {
  FakeFar far;
  ClientCounters k;
  LockTier t(Small(), {}, far.Bind(), &k);
  t.Enter(true);
  ASSERT_TRUE(WriteByte(t, 0, 1, 8).ok());
  far.fail_post = Status::Unavailable("memory node 1 is gone");
  Status s = t.Leave(true);
  EXPECT_EQ(s.code(), Status::Code::kUnavailable);
  EXPECT_EQ(k.lock_buffer_dropped_bytes, 8u);
  EXPECT_FALSE(t.holding());
  // A write that fails while waiting: the same.
  t.Enter(true);
  ASSERT_TRUE(WriteByte(t, 0, 2, 8).ok());
  far.fail_wait = Status::Timeout("flush to memory node 1");
  EXPECT_EQ(t.Leave(true).code(), Status::Code::kTimeout);
  EXPECT_EQ(k.lock_buffer_dropped_bytes, 16u);
  EXPECT_EQ(k.lock_buffer_flushed_bytes, 0u);
}

TEST(LockTier, AnAbandonedHoldDropsItsBufferUnwritten) {
  FakeFar far;
  ClientCounters k;
  LockTier t(Small(), {}, far.Bind(), &k);
  t.Enter(true);
  ASSERT_TRUE(WriteByte(t, 64, 9, 8).ok());
  t.Abandon(true);
  EXPECT_EQ(far.posts, 0);
  EXPECT_EQ(far.at(64), 0);
  EXPECT_EQ(k.lock_buffer_dropped_bytes, 8u);
  EXPECT_FALSE(t.holding());
}

TEST(LockTier, ReadHotBlocksAreCachedUnderSharedHoldsAndDroppedByWritesAndReleases) {
  FakeFar far;
  ClientCounters k;
  LockTier t(Small(), {}, far.Bind(), &k);  // H_p = 4: hot on the 5th read
  t.Enter(/*exclusive=*/false);
  uint8_t got[8];
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t.Read(512, got, 8).ok());
  EXPECT_EQ(far.reads, 4) << "not yet read-hot: just the bytes asked for";
  ASSERT_TRUE(t.Read(512, got, 8).ok());  // admitted: the block is fetched
  EXPECT_EQ(far.reads, 5);
  far.bytes[520] = 0x5a;  // behind the cache's back: a hit returns the cached bytes
  uint8_t wide[16];
  ASSERT_TRUE(t.Read(512, wide, 16).ok());
  EXPECT_EQ(far.reads, 5);
  EXPECT_EQ(wide[8], 0) << "a hit: the cached block's bytes";
  EXPECT_EQ(t.cache_counters().cache_hits, 1u);
  ASSERT_TRUE(t.BeforeWrite(700, 4).ok());  // a write drops the cache
  uint8_t again[16];
  ASSERT_TRUE(t.Read(512, again, 16).ok());
  EXPECT_EQ(again[8], 0x5a);
  ASSERT_TRUE(t.Read(512, again, 16).ok());  // still hot: cached again, then hit
  ASSERT_TRUE(t.Leave(false).ok());  // release drops it
  t.Enter(false);
  far.bytes[513] = 0x6b;
  ASSERT_TRUE(t.Read(512, again, 2).ok());
  EXPECT_EQ(again[1], 0x6b) << "served from a cache kept across a release";
  ASSERT_TRUE(t.Leave(false).ok());
  // Not under an exclusive hold: reads go straight to far memory.
  t.Enter(true);
  const int before = far.reads;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(t.Read(512, again, 2).ok());
  EXPECT_EQ(far.reads, before + 10);
  ASSERT_TRUE(t.Leave(true).ok());
}

TEST(LockTier, OptionsAreChecked) {
  LockTierOptions o;
  EXPECT_TRUE(CheckLockTierOptions(o).ok());
  o.cache_page_bytes = 100;
  EXPECT_EQ(CheckLockTierOptions(o).code(), Status::Code::kInvalidArgument);
  o = {};
  o.cache_pages = 0;
  EXPECT_EQ(CheckLockTierOptions(o).code(), Status::Code::kInvalidArgument);
  o = {};
  o.write_buffer_bytes = 0;
  EXPECT_EQ(CheckLockTierOptions(o).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace pulse
