// The Outbox (src/protocol/outbox.h) over a real loopback connection: how
// it packs each destination's queue into plain messages and envelopes
// within the limits, in order, and what it hands back when a send fails.
#include <gtest/gtest.h>

#include <mutex>

#include "net/test_util.h"
#include "protocol/outbox.h"
#include "pulse/cluster.h"

namespace pulse {
namespace {

using net::testing::MakeWorker;
using net::testing::PeerThread;
using namespace std::chrono_literals;

// What the peer received: per active message, its id and the traversal
// messages in it (one for a plain message).
struct Received {
  std::mutex mu;
  std::vector<std::pair<uint16_t, std::vector<std::vector<uint8_t>>>> messages;
  size_t carried() {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const auto& m : messages) n += m.second.size();
    return n;
  }
};

std::vector<uint8_t> Message(uint32_t i, size_t bytes) {
  std::vector<uint8_t> m(bytes, static_cast<uint8_t>(i));
  std::memcpy(m.data(), &i, sizeof(i));
  return m;
}

class OutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(peer_.ok());
    worker_ = MakeWorker();
    ASSERT_NE(worker_, nullptr);
    auto ep = worker_->Connect("127.0.0.1", peer_.port(), 10s);
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    ep_ = *ep;
  }
  // Drives our side until the peer has `n` traversal messages.
  void WaitFor(size_t n) {
    ASSERT_TRUE(worker_->RunUntil([&] { return received_.carried() >= n; }, 10s).ok())
        << received_.carried() << " of " << n;
  }

  Received received_;
  PeerThread peer_{{}, [this](net::Worker& w) {
                     w.SetHandler(kAmTraversal, [this](net::EndpointId, std::span<const uint8_t> p) {
                       std::lock_guard<std::mutex> lock(received_.mu);
                       received_.messages.push_back({kAmTraversal, {std::vector<uint8_t>(p.begin(), p.end())}});
                     });
                     w.SetHandler(kAmBatch, [this](net::EndpointId, std::span<const uint8_t> p) {
                       auto batch = DecodeBatch(p);
                       EXPECT_TRUE(batch.ok()) << batch.status().ToString();
                       if (!batch.ok()) return;
                       std::vector<std::vector<uint8_t>> inner;
                       for (auto m : batch->messages) inner.emplace_back(m.begin(), m.end());
                       std::lock_guard<std::mutex> lock(received_.mu);
                       received_.messages.push_back({kAmBatch, std::move(inner)});
                     });
                   }};
  std::unique_ptr<net::Worker> worker_;
  net::EndpointId ep_ = net::kInvalidEndpoint;
};

TEST_F(OutboxTest, AQueueLeavesInEnvelopesOfAtMostMaxMessagesInOrder) {
  Outbox out(worker_.get(), BatchLimits{16, 64 * 1024});
  for (uint32_t i = 0; i < 40; ++i) out.Add(ep_, Message(i, 100), i);
  EXPECT_FALSE(out.empty());
  out.Flush({});
  EXPECT_TRUE(out.empty());
  WaitFor(40);
  std::lock_guard<std::mutex> lock(received_.mu);
  ASSERT_EQ(received_.messages.size(), 3u);
  uint32_t next = 0;
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(received_.messages[k].first, kAmBatch);
    EXPECT_EQ(received_.messages[k].second.size(), k < 2 ? 16u : 8u);
    for (const auto& m : received_.messages[k].second) EXPECT_EQ(m, Message(next++, 100));
  }
  EXPECT_EQ(out.counters().messages, 3u);
  EXPECT_EQ(out.counters().carried, 40u);
  EXPECT_EQ(out.counters().envelopes, 3u);
  EXPECT_EQ(out.counters().failed, 0u);
}

TEST_F(OutboxTest, TheByteLimitSplitsRunsAndALoneMessageTravelsPlain) {
  Outbox out(worker_.get(), BatchLimits{16, 8 * 1024});
  // 3000 + 3000 fit in 8 KiB with the headers, a third does not; 10000
  // exceeds the limit alone and goes alone; the last one is alone too.
  out.Add(ep_, Message(0, 3000));
  out.Add(ep_, Message(1, 3000));
  out.Add(ep_, Message(2, 3000));
  out.Add(ep_, Message(3, 10000));
  out.Flush({});
  WaitFor(4);
  std::lock_guard<std::mutex> lock(received_.mu);
  ASSERT_EQ(received_.messages.size(), 3u);
  EXPECT_EQ(received_.messages[0].first, kAmBatch);
  EXPECT_EQ(received_.messages[0].second.size(), 2u);
  EXPECT_EQ(received_.messages[1].first, kAmTraversal);
  EXPECT_EQ(received_.messages[1].second[0], Message(2, 3000));
  EXPECT_EQ(received_.messages[2].first, kAmTraversal);
  EXPECT_EQ(received_.messages[2].second[0], Message(3, 10000));
  EXPECT_EQ(out.counters().envelopes, 1u);
}

TEST_F(OutboxTest, WithoutBatchingEveryMessageIsPlain) {
  Outbox out(worker_.get(), BatchLimits{1, 8 * 1024});
  for (uint32_t i = 0; i < 5; ++i) out.Add(ep_, Message(i, 50));
  out.Flush({});
  WaitFor(5);
  std::lock_guard<std::mutex> lock(received_.mu);
  ASSERT_EQ(received_.messages.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(received_.messages[i].first, kAmTraversal);
    EXPECT_EQ(received_.messages[i].second[0], Message(i, 50));
  }
}

TEST_F(OutboxTest, AFailedSendHandsBackEveryMessageWithItsTag) {
  Outbox out(worker_.get(), BatchLimits{});
  const net::EndpointId nowhere = ep_ + 1000;
  for (uint32_t i = 0; i < 3; ++i) out.Add(nowhere, Message(i, 80), 100 + i);
  out.Add(ep_, Message(7, 80), 7);
  std::vector<uint64_t> tags;
  out.Flush([&](net::EndpointId to, Outbox::Entry&& e, const Status& why) {
    EXPECT_EQ(to, nowhere);
    EXPECT_FALSE(why.ok());
    EXPECT_EQ(e.bytes, Message(static_cast<uint32_t>(e.tag - 100), 80));
    tags.push_back(e.tag);
  });
  EXPECT_EQ(tags, (std::vector<uint64_t>{100, 101, 102}));
  EXPECT_EQ(out.counters().failed, 3u);
  WaitFor(1);  // the other destination was served all the same
  EXPECT_EQ(out.counters().carried, 1u);
}

}  // namespace
}  // namespace pulse
