// Peer failure: killed processes, closed endpoints, refused and unanswered
// connections.  Every wait is bounded.
#include <signal.h>

#include <optional>

#include "net/test_util.h"

namespace pulse::net::testing {
namespace {

struct Watched {
  std::unique_ptr<Worker> w;
  EndpointId ep = kInvalidEndpoint;
  std::optional<Status> disconnect;
  EndpointId disconnected = kInvalidEndpoint;
  int replies = 0;

  explicit Watched(const WorkerOptions& o = {}) : w(MakeWorker(o)) {
    if (w == nullptr) return;
    w->SetDisconnectHandler([this](EndpointId id, const Status& why) {
      EXPECT_FALSE(disconnect.has_value()) << "disconnect handler called twice";
      disconnected = id;
      disconnect = why;
    });
    w->SetHandler(kEchoReply, [this](EndpointId, std::span<const uint8_t>) { ++replies; });
  }
  bool Connect(uint16_t port) {
    auto r = w->Connect("127.0.0.1", port, 10s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) ep = *r;
    return r.ok();
  }
  bool Echo() {
    int before = replies;
    const uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    if (!w->Send(ep, kEcho, b).ok()) return false;
    return w->RunUntil([&] { return replies > before; }, 10s).ok();
  }
};

void KillPeerAndExpectDisconnect(const WorkerOptions& options) {
  PeerProcess peer("echo");
  ASSERT_NE(peer.port(), 0) << "net_peer did not start";
  Watched c(options);
  ASSERT_TRUE(c.Connect(peer.port()));
  ASSERT_TRUE(c.Echo());

  peer.Signal(SIGKILL);
  ASSERT_GE(peer.Wait(10s), 0);
  auto start = Clock::now();
  Status s = c.w->RunUntil([&] { return c.disconnect.has_value(); }, 30s);
  ASSERT_TRUE(s.ok()) << "no disconnect within 30 s: " << s.ToString();
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  EXPECT_LT(took, 10s);
  EXPECT_EQ(c.disconnected, c.ep);
  EXPECT_EQ(c.disconnect->code(), Status::Code::kUnavailable) << c.disconnect->ToString();
  EXPECT_FALSE(c.w->IsConnected(c.ep));
  const uint8_t b[1] = {0};
  EXPECT_EQ(c.w->Send(c.ep, kEcho, b).code(), Status::Code::kUnavailable);
  EXPECT_EQ(c.w->Flush(c.ep, 1s).code(), Status::Code::kUnavailable);
  EXPECT_EQ(c.w->counters().endpoints_failed, 1u);
  EXPECT_TRUE(c.w->Close(c.ep).ok());
  EXPECT_EQ(c.w->Send(c.ep, kEcho, b).code(), Status::Code::kNotFound);
  std::printf("disconnect noticed %lld ms after the kill: %s\n",
              static_cast<long long>(took.count()), c.disconnect->ToString().c_str());
}

TEST(NetFailure, KilledPeerProcessFiresDisconnectAndSendFails) {
  KillPeerAndExpectDisconnect({});
}

TEST(NetFailure, KilledPeerDetectedWhileSendingLargeMessages) {
  PeerProcess peer("echo");
  ASSERT_NE(peer.port(), 0);
  Watched c;
  ASSERT_TRUE(c.Connect(peer.port()));
  ASSERT_TRUE(c.Echo());
  std::vector<uint8_t> big(1 << 20, 0x5a);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(c.w->Send(c.ep, kEcho, big).ok());
  peer.Signal(SIGKILL);
  ASSERT_GE(peer.Wait(10s), 0);
  // Keep sending until the failure is seen: Send must turn Unavailable.
  Status last;
  const uint8_t small[16] = {};
  Status s = c.w->RunUntil(
      [&] {
        last = c.w->Send(c.ep, kEcho, small);
        return !last.ok();
      },
      30s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(last.code(), Status::Code::kUnavailable) << last.ToString();
  ASSERT_TRUE(c.w->RunUntil([&] { return c.disconnect.has_value(); }, 10s).ok());
}

TEST(NetFailure, PeerCloseFiresDisconnect) {
  EndpointId server_side = kInvalidEndpoint;
  PeerThread server({}, [&](Worker& w) {
    InstallEcho(w);
    w.SetAcceptHandler([&](EndpointId ep, const std::string&) { server_side = ep; });
  });
  ASSERT_TRUE(server.ok());
  Watched c;
  ASSERT_TRUE(c.Connect(server.port()));
  ASSERT_TRUE(c.Echo());
  Status closed;
  ASSERT_TRUE(server.Call([&](Worker& w) { closed = w.Close(server_side, 1s); }));
  EXPECT_TRUE(closed.ok()) << closed.ToString();
  ASSERT_TRUE(c.w->RunUntil([&] { return c.disconnect.has_value(); }, 20s).ok());
  EXPECT_EQ(c.disconnect->code(), Status::Code::kUnavailable);
  const uint8_t b[1] = {0};
  EXPECT_EQ(c.w->Send(c.ep, kEcho, b).code(), Status::Code::kUnavailable);
}

TEST(NetFailure, PeerWorkerDestroyedFiresDisconnect) {
  auto server = std::make_unique<PeerThread>(WorkerOptions{}, InstallEcho);
  ASSERT_TRUE(server->ok());
  Watched c;
  ASSERT_TRUE(c.Connect(server->port()));
  ASSERT_TRUE(c.Echo());
  server.reset();  // ~Worker closes its endpoints
  ASSERT_TRUE(c.w->RunUntil([&] { return c.disconnect.has_value(); }, 20s).ok());
}

TEST(NetFailure, LocalCloseDoesNotCallDisconnectHandler) {
  PeerThread server({}, InstallEcho);
  ASSERT_TRUE(server.ok());
  Watched c;
  ASSERT_TRUE(c.Connect(server.port()));
  ASSERT_TRUE(c.Echo());
  ASSERT_TRUE(c.w->Close(c.ep).ok());
  EXPECT_FALSE(c.w->IsConnected(c.ep));
  (void)c.w->RunUntil([] { return false; }, 50ms);
  EXPECT_FALSE(c.disconnect.has_value());
  // The worker is still usable.
  ASSERT_TRUE(c.Connect(server.port()));
  ASSERT_TRUE(c.Echo());
}

TEST(NetFailure, ConnectToClosedPortIsUnavailable) {
  uint16_t port = 0;
  {
    auto w = MakeWorker();
    ASSERT_NE(w, nullptr);
    auto p = w->Listen("127.0.0.1", 0);
    ASSERT_TRUE(p.ok());
    port = *p;
  }
  Watched c;
  auto start = Clock::now();
  auto r = c.w->Connect("127.0.0.1", port, 10s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable) << r.status().ToString();
  EXPECT_LT(Clock::now() - start, 10s);
  EXPECT_EQ(c.w->endpoint_count(), 0u);
  EXPECT_FALSE(c.disconnect.has_value());
}

TEST(NetFailure, ConnectToStoppedPeerTimesOut) {
  PeerProcess peer("echo");
  ASSERT_NE(peer.port(), 0);
  peer.Signal(SIGSTOP);
  Watched c;
  auto start = Clock::now();
  auto r = c.w->Connect("127.0.0.1", peer.port(), 300ms);
  auto took = Clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kTimeout) << r.status().ToString();
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 5s);
  EXPECT_EQ(c.w->endpoint_count(), 0u);
  peer.Signal(SIGCONT);
}

}  // namespace
}  // namespace pulse::net::testing
