// Active messages between two Workers on two threads of this process.
#include <cstring>
#include <deque>
#include <set>
#include <vector>

#include "net/test_util.h"

namespace pulse::net::testing {
namespace {

TEST(NetAm, PingPongManySizes) {
  PeerThread server({}, InstallEcho);
  ASSERT_TRUE(server.ok());
  EchoClient c(server.port());
  ASSERT_TRUE(c.ok());
  const size_t sizes[] = {0, 1, 7, 64, 100, 1000, 4096, 8192, 8193, 65536, 300000, 1 << 20,
                          4 << 20};
  uint32_t seed = 0;
  for (size_t size : sizes) {
    for (int rep = 0; rep < 3; ++rep) {
      auto payload = Pattern(size, ++seed);
      auto reply = c.RoundTrip(payload);
      ASSERT_EQ(reply.size(), size) << "size " << size;
      ASSERT_TRUE(reply == payload) << "payload mismatch at size " << size;
    }
  }
  const Counters& k = c.w->counters();
  EXPECT_EQ(k.messages_sent, 3 * std::size(sizes));
  EXPECT_EQ(k.messages_received, 3 * std::size(sizes));
  EXPECT_EQ(k.messages_dropped, 0u);
  EXPECT_GT(k.bytes_received, 15u << 20);
}

// Many messages in flight, sizes mixing eager and rendezvous: both the
// server (which echoes in arrival order) and the client must see them in
// the order sent.
TEST(NetAm, OrderPreservedPerEndpointAcrossProtocols) {
  PeerThread server({}, InstallEcho);
  ASSERT_TRUE(server.ok());
  EchoClient c(server.port());
  ASSERT_TRUE(c.ok());
  const size_t sizes[] = {8, 9000, 200000, 16, 1 << 20, 0, 70000, 100};
  const uint32_t kCount = 200;
  for (uint32_t i = 0; i < kCount; ++i) {
    size_t size = std::max<size_t>(sizes[i % std::size(sizes)], 4);
    auto payload = Pattern(size, i);
    std::memcpy(payload.data(), &i, 4);
    ASSERT_TRUE(c.w->Send(c.ep, kEcho, payload).ok());
    if (i % 50 == 49) c.w->Progress();
  }
  Status s = c.w->RunUntil([&] { return c.replies.size() == kCount; }, 60s);
  ASSERT_TRUE(s.ok()) << s.ToString() << " got " << c.replies.size();
  for (uint32_t i = 0; i < kCount; ++i) {
    const auto& r = c.replies[i];
    size_t size = std::max<size_t>(sizes[i % std::size(sizes)], 4);
    ASSERT_EQ(r.size(), size) << "message " << i;
    uint32_t seq = 0;
    std::memcpy(&seq, r.data(), 4);
    ASSERT_EQ(seq, i);
    auto expect = Pattern(size, i);
    std::memcpy(expect.data(), &i, 4);
    ASSERT_TRUE(r == expect) << "message " << i;
  }
}

TEST(NetAm, OwnedBufferSendAndBurstOfSmallMessages) {
  PeerThread server({}, InstallEcho);
  ASSERT_TRUE(server.ok());
  EchoClient c(server.port());
  ASSERT_TRUE(c.ok());
  const uint32_t kCount = 5000;
  for (uint32_t i = 0; i < kCount; ++i) {
    std::vector<uint8_t> v(4);
    std::memcpy(v.data(), &i, 4);
    ASSERT_TRUE(c.w->Send(c.ep, kEcho, std::move(v)).ok());
  }
  ASSERT_TRUE(c.w->RunUntil([&] { return c.replies.size() == kCount; }, 30s).ok());
  for (uint32_t i = 0; i < kCount; ++i) {
    uint32_t seq = 0;
    std::memcpy(&seq, c.replies[i].data(), 4);
    ASSERT_EQ(seq, i);
  }
}

TEST(NetAm, UnhandledIdIsDroppedAndCounted) {
  PeerThread server({}, InstallEcho);
  ASSERT_TRUE(server.ok());
  EchoClient c(server.port());
  ASSERT_TRUE(c.ok());
  const uint8_t b[3] = {1, 2, 3};
  ASSERT_TRUE(c.w->Send(c.ep, 999, b).ok());
  // The echo after it is handled after it (order), so the drop is counted
  // by the time the reply arrives.
  auto reply = c.RoundTrip({9});
  ASSERT_EQ(reply.size(), 1u);
  uint64_t dropped = 0;
  ASSERT_TRUE(server.Call([&](Worker& w) { dropped = w.counters().messages_dropped; }));
  EXPECT_EQ(dropped, 1u);
}

TEST(NetAm, UnknownEndpointIsNotFound) {
  auto w = MakeWorker();
  ASSERT_NE(w, nullptr);
  const uint8_t b[1] = {0};
  EXPECT_EQ(w->Send(42, kEcho, b).code(), Status::Code::kNotFound);
  EXPECT_EQ(w->Close(42).code(), Status::Code::kNotFound);
  EXPECT_FALSE(w->IsConnected(42));
}

TEST(NetAm, AcceptHandlerSeesEachClient) {
  std::atomic<int> accepted{0};
  PeerThread server({}, [&](Worker& w) {
    InstallEcho(w);
    w.SetAcceptHandler([&](EndpointId ep, const std::string& peer) {
      EXPECT_NE(ep, kInvalidEndpoint);
      EXPECT_NE(peer.find("127.0.0.1"), std::string::npos) << peer;
      ++accepted;
    });
  });
  ASSERT_TRUE(server.ok());
  EchoClient a(server.port());
  EchoClient b(server.port());
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a.RoundTrip({1, 2}), (std::vector<uint8_t>{1, 2}));
  EXPECT_EQ(b.RoundTrip({3}), (std::vector<uint8_t>{3}));
  EXPECT_EQ(accepted.load(), 2);
  size_t count = 0;
  ASSERT_TRUE(server.Call([&](Worker& w) { count = w.endpoint_count(); }));
  EXPECT_EQ(count, 2u);
}

TEST(NetAm, ListenTwiceAndBadHostAreInvalid) {
  auto w = MakeWorker();
  ASSERT_NE(w, nullptr);
  auto p = w->Listen("127.0.0.1", 0);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(*p, 0);
  EXPECT_EQ(w->Listen("127.0.0.1", 0).status().code(), Status::Code::kInvalidArgument);
  auto other = MakeWorker();
  ASSERT_NE(other, nullptr);
  auto taken = other->Listen("127.0.0.1", *p);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.status().code(), Status::Code::kIoError) << taken.status().ToString();
  EXPECT_EQ(w->Connect("no.such.host.invalid", 1, 1s).status().code(),
            Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace pulse::net::testing
