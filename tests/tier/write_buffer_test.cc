// The write buffer's rules (pulse/tier/write_buffer.h): what is buffered,
// merging, read-your-writes over a batch in flight, when a flush is due,
// one batch in flight at a time; and a randomized run against a plain byte
// array, with batches landing in far memory at random moments.
#include "pulse/tier/write_buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace pulse::tier {
namespace {

std::vector<uint8_t> Bytes(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

TEST(WriteBuffer, BuffersOnlyWritesBelowTheThresholdWhenEnabled) {
  WriteBuffer b({.enabled = true, .threshold_bytes = 256, .buffer_bytes = 1 << 20});
  EXPECT_FALSE(b.Buffers(0));
  EXPECT_TRUE(b.Buffers(1));
  EXPECT_TRUE(b.Buffers(255));
  EXPECT_FALSE(b.Buffers(256));
  EXPECT_FALSE(b.Buffers(4096));
  WriteBuffer off({.enabled = false});
  EXPECT_FALSE(off.Buffers(8));
}

TEST(WriteBuffer, OverlappingAndAdjacentWritesMergeAndTheNewestBytesWin) {
  WriteBuffer b({.buffer_bytes = 1 << 20});
  auto a = Bytes(8, 1), c = Bytes(8, 2), d = Bytes(4, 3);
  b.Add(100, a.data(), 8);   // [100, 108)
  b.Add(108, c.data(), 8);   // adjacent: [100, 116)
  b.Add(104, d.data(), 4);   // inside, newer
  EXPECT_EQ(b.pending_bytes(), 16u);
  auto batch = b.StartFlush();
  ASSERT_NE(batch, nullptr);
  ASSERT_EQ(batch->size(), 1u);
  const std::vector<uint8_t>& bytes = batch->at(100);
  std::vector<uint8_t> want = {1, 1, 1, 1, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2};
  EXPECT_EQ(bytes, want);
  // A gap keeps extents apart.
  b.FinishFlush();
  b.Add(0, a.data(), 8);
  b.Add(9, a.data(), 8);
  EXPECT_EQ(b.pending_bytes(), 16u);
  batch = b.StartFlush();
  EXPECT_EQ(batch->size(), 2u);
}

TEST(WriteBuffer, AFlushIsDueAtTheBufferSize) {
  WriteBuffer b({.threshold_bytes = 256, .buffer_bytes = 64});
  auto v = Bytes(16, 7);
  for (int i = 0; i < 3; ++i) {
    b.Add(1000 + 32 * i, v.data(), 16);
    EXPECT_FALSE(b.ShouldFlush()) << i;
  }
  b.Add(1000 + 96, v.data(), 16);  // 64 bytes pending
  EXPECT_TRUE(b.ShouldFlush());
  // Rewriting buffered bytes adds nothing.
  WriteBuffer c({.buffer_bytes = 32});
  for (int i = 0; i < 10; ++i) c.Add(0, v.data(), 16);
  EXPECT_EQ(c.pending_bytes(), 16u);
  EXPECT_FALSE(c.ShouldFlush());
}

TEST(WriteBuffer, OneBatchInFlightAtATime) {
  WriteBuffer b({.buffer_bytes = 1});
  EXPECT_EQ(b.StartFlush(), nullptr);  // nothing pending
  auto v = Bytes(4, 9);
  b.Add(0, v.data(), 4);
  auto first = b.StartFlush();
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(b.in_flight());
  EXPECT_FALSE(b.has_pending());
  b.Add(8, v.data(), 4);
  EXPECT_EQ(b.StartFlush(), nullptr);  // the first must finish first
  b.FinishFlush();
  auto second = b.StartFlush();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->begin()->first, 8u);
  // The batch's bytes outlive the buffer's hold on them.
  b.FinishFlush();
  EXPECT_EQ(first->at(0), v);
  EXPECT_TRUE(b.empty());
}

TEST(WriteBuffer, ReadsSeePendingOverInFlightOverFarMemory) {
  WriteBuffer b({.buffer_bytes = 1 << 20});
  auto one = Bytes(4, 1), two = Bytes(2, 2);
  b.Add(10, one.data(), 4);  // [10, 14) = 1
  auto batch = b.StartFlush();
  b.Add(12, two.data(), 2);  // [12, 14) = 2, newer, pending
  std::vector<uint8_t> far(8, 0xee);  // far bytes of [8, 16)
  EXPECT_TRUE(b.Overlaps(8, 8));
  EXPECT_FALSE(b.Overlaps(0, 10));
  EXPECT_FALSE(b.Overlaps(14, 4));
  EXPECT_FALSE(b.Covers(8, 8));
  EXPECT_TRUE(b.Covers(10, 4));  // in flight and pending together
  EXPECT_TRUE(b.Covers(12, 2));
  b.Overlay(8, far.data(), far.size());
  std::vector<uint8_t> want = {0xee, 0xee, 1, 1, 2, 2, 0xee, 0xee};
  EXPECT_EQ(far, want);
}

TEST(WriteBuffer, DiscardDropsEverything) {
  WriteBuffer b({.buffer_bytes = 1 << 20});
  auto v = Bytes(8, 1);
  b.Add(0, v.data(), 8);
  auto batch = b.StartFlush();
  b.Add(100, v.data(), 4);
  EXPECT_EQ(b.Discard(), 12u);
  EXPECT_TRUE(b.empty());
  EXPECT_FALSE(b.Overlaps(0, 200));
}

// Random small writes and reads over a 512-byte space; batches start when
// due and land in `far` at random later moments (whole, in one step, as the
// caller's wait makes them).  Every read (far + Overlay) equals the
// reference; at the end a final flush leaves far equal to it.
TEST(WriteBuffer, RandomWritesReadsAndFlushesMatchAPlainArray) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    WriteBuffer b({.threshold_bytes = 64, .buffer_bytes = 1 + rng() % 200});
    std::vector<uint8_t> far(512, 0), ref(512, 0);
    std::shared_ptr<const WriteBuffer::Extents> flying;
    auto land = [&] {
      for (const auto& [addr, bytes] : *flying) std::memcpy(far.data() + addr, bytes.data(), bytes.size());
      flying.reset();
      b.FinishFlush();
    };
    for (int op = 0; op < 3000; ++op) {
      const uint64_t addr = rng() % 500, len = 1 + rng() % std::min<uint64_t>(63, 512 - addr);
      if (rng() % 2 == 0) {
        std::vector<uint8_t> v(len);
        for (auto& x : v) x = static_cast<uint8_t>(rng());
        b.Add(addr, v.data(), len);
        std::memcpy(ref.data() + addr, v.data(), len);
        if (b.ShouldFlush()) {
          if (flying != nullptr) land();  // the caller waits for the batch in flight first
          flying = b.StartFlush();
          ASSERT_NE(flying, nullptr);
        }
      } else {
        std::vector<uint8_t> got(far.begin() + addr, far.begin() + addr + len);
        b.Overlay(addr, got.data(), len);
        ASSERT_EQ(0, std::memcmp(got.data(), ref.data() + addr, len)) << "seed " << seed << " op " << op;
        if (b.Covers(addr, len)) {
          std::vector<uint8_t> blank(len, 0x5a);
          b.Overlay(addr, blank.data(), len);
          ASSERT_EQ(0, std::memcmp(blank.data(), ref.data() + addr, len)) << "covered, seed " << seed;
        }
      }
      if (flying != nullptr && rng() % 7 == 0) land();
    }
    if (flying != nullptr) land();  // unlock: everything, waited for
    flying = b.StartFlush();
    if (flying != nullptr) land();
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(far, ref) << "seed " << seed;
  }
}

}  // namespace
}  // namespace pulse::tier
