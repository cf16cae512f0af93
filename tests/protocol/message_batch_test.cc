// The batch envelope (include/pulse/message_batch.h): round trips, and every
// way a malformed envelope is refused whole.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "pulse/cluster.h"
#include "pulse/message_batch.h"
#include "pulse/protocol.h"

namespace pulse {
namespace {

std::vector<uint8_t> Message(uint64_t id, size_t scratch) {
  TraversalMessage m;
  m.request_id = id;
  m.cpu_node = 1;
  m.cur_ptr = 0x10000 + id;
  m.scratch.assign(scratch, static_cast<uint8_t>(id));
  return EncodeMessage(m);
}

std::vector<std::vector<uint8_t>> Messages(size_t n) {
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < n; ++i) out.push_back(Message(i + 1, 8 * (i % 5)));
  return out;
}

void PutU32(std::vector<uint8_t>* bytes, size_t at, uint32_t v) { std::memcpy(bytes->data() + at, &v, 4); }

TEST(MessageBatch, RoundTripKeepsEveryMessageInOrder) {
  for (size_t n : {2u, 3u, 17u, static_cast<unsigned>(kMaxBatchMessages)}) {
    const auto messages = Messages(n);
    const std::vector<uint8_t> bytes = EncodeBatch(kAmTraversal, messages);
    EXPECT_EQ(bytes.size(), BatchEnvelopeBytes(messages));
    auto batch = DecodeBatch(bytes);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    EXPECT_EQ(batch->inner_am, kAmTraversal);
    ASSERT_EQ(batch->messages.size(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(std::vector<uint8_t>(batch->messages[i].begin(), batch->messages[i].end()), messages[i]) << i;
      auto inner = DecodeMessage(batch->messages[i], 1024);
      ASSERT_TRUE(inner.ok()) << inner.status().ToString();
      EXPECT_EQ(inner->request_id, i + 1);
    }
  }
}

TEST(MessageBatch, EveryTruncationIsRefused) {
  const std::vector<uint8_t> bytes = EncodeBatch(kAmTraversal, Messages(4));
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto batch = DecodeBatch(std::span<const uint8_t>(bytes.data(), len));
    ASSERT_FALSE(batch.ok()) << len;
    EXPECT_EQ(batch.status().code(), Status::Code::kInvalidArgument);
  }
}

TEST(MessageBatch, TrailingBytesAreRefused) {
  std::vector<uint8_t> bytes = EncodeBatch(kAmTraversal, Messages(3));
  bytes.push_back(0);
  EXPECT_FALSE(DecodeBatch(bytes).ok());
}

TEST(MessageBatch, LyingCountsAreRefusedBeforeAnythingIsSizedByThem) {
  const std::vector<uint8_t> good = EncodeBatch(kAmTraversal, Messages(3));
  for (uint32_t count : {0u, 1u, 2u, 4u, 255u, kMaxBatchMessages + 1, 0xffffffffu}) {
    std::vector<uint8_t> bytes = good;
    PutU32(&bytes, 4, count);
    auto batch = DecodeBatch(bytes);
    EXPECT_FALSE(batch.ok()) << count;
  }
}

TEST(MessageBatch, LyingLengthsAreRefused) {
  const auto messages = Messages(3);
  const std::vector<uint8_t> good = EncodeBatch(kAmTraversal, messages);
  const size_t first_length_at = kBatchHeaderBytes;
  for (uint32_t length : {0u, 1u, static_cast<uint32_t>(messages[0].size() - 1),
                          static_cast<uint32_t>(messages[0].size() + 1), static_cast<uint32_t>(good.size()),
                          0xffffffffu}) {
    std::vector<uint8_t> bytes = good;
    PutU32(&bytes, first_length_at, length);
    EXPECT_FALSE(DecodeBatch(bytes).ok()) << length;
  }
  // The last message claiming more than is left.
  std::vector<uint8_t> bytes = good;
  const size_t last_length_at = good.size() - messages[2].size() - 4;
  PutU32(&bytes, last_length_at, static_cast<uint32_t>(messages[2].size() + 1));
  EXPECT_FALSE(DecodeBatch(bytes).ok());
}

TEST(MessageBatch, BadMagicVersionAndOversizeAreRefused) {
  const std::vector<uint8_t> good = EncodeBatch(kAmTraversal, Messages(2));
  std::vector<uint8_t> bad = good;
  bad[0] ^= 0xff;
  EXPECT_FALSE(DecodeBatch(bad).ok());
  bad = good;
  bad[1] = 2;
  EXPECT_FALSE(DecodeBatch(bad).ok());
  // Two messages that together exceed what any receiver accepts.
  std::vector<std::vector<uint8_t>> big{std::vector<uint8_t>(kMaxBatchBytes / 2, 1),
                                        std::vector<uint8_t>(kMaxBatchBytes / 2, 2)};
  auto batch = DecodeBatch(EncodeBatch(kAmTraversal, big));
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find("limit"), std::string::npos) << batch.status().ToString();
}

TEST(MessageBatch, RandomBytesNeverDecodeOutsideTheInput) {
  std::mt19937_64 rng(7);
  const std::vector<uint8_t> good = EncodeBatch(kAmTraversal, Messages(5));
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> bytes = good;
    for (int k = 0; k < 3; ++k) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    auto batch = DecodeBatch(bytes);
    if (!batch.ok()) continue;
    size_t covered = kBatchHeaderBytes;
    for (auto m : batch->messages) {
      ASSERT_GE(m.data(), bytes.data());
      ASSERT_LE(m.data() + m.size(), bytes.data() + bytes.size());
      covered += 4 + m.size();
    }
    EXPECT_EQ(covered, bytes.size());
  }
}

TEST(MessageBatch, LimitsFromTheEnvironment) {
  BatchLimits configured;
  configured.max_messages = 7;
  unsetenv("PULSE_BATCH");
  auto l = BatchLimitsFromEnvironment(configured);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->max_messages, 7u);
  setenv("PULSE_BATCH", "off", 1);
  l = BatchLimitsFromEnvironment(configured);
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE(l->enabled());
  setenv("PULSE_BATCH", "messages=4,bytes=2048", 1);
  l = BatchLimitsFromEnvironment(configured);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->max_messages, 4u);
  EXPECT_EQ(l->max_bytes, 2048u);
  setenv("PULSE_BATCH", "bytes=100", 1);
  l = BatchLimitsFromEnvironment(configured);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->max_messages, 7u);
  for (const char* bad : {"on", "messages=", "messages=0", "messages=100000", "bytes=x", "messages=4,"}) {
    setenv("PULSE_BATCH", bad, 1);
    auto r = BatchLimitsFromEnvironment(configured);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  }
  unsetenv("PULSE_BATCH");
  BatchLimits huge{100000, 1u << 30};
  EXPECT_EQ(huge.Clamped().max_messages, kMaxBatchMessages);
  EXPECT_EQ(huge.Clamped().max_bytes, kMaxBatchBytes);
}

}  // namespace
}  // namespace pulse
