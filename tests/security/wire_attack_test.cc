// Nothing on the wire can crash a node (issue 19, part 1).  A running rack
// (switch + two memory nodes, real processes) gets, on every TCP port each
// of its processes listens on (pulse's own listener and whatever UCX's
// transports opened): zero bytes, 64 KiB of 0xff, random bytes, zero runs,
// truncated and replayed handshakes, peers that vanish mid-message and a
// burst of half-open connections.  Afterwards every node must still serve a
// traversal across both memory nodes and one-sided reads and writes.
//
// Before pulse's own handshake, the 32 zero bytes alone aborted the switch
// inside UCX 1.13's connection manager (tcp_sockcm_ep.c:825).
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine/run_both.h"
#include "engine/sum_list_program.h"
#include "net/handshake.h"
#include "pulse/client.h"
#include "pulse/program.h"
#include "security/tcp_probe.h"
#include "support/local_rack.h"

namespace pulse::testing {
namespace {

using namespace std::chrono_literals;

// A fresh client builds a two-element list {next @0, value @8} across both
// memory nodes with one-sided writes, reads it back, and sums it with an
// offloaded traversal (client -> switch -> node 0 -> node 1).
void ExpectRackServes(LocalRack& rack, uint64_t salt) {
  ClientOptions co;
  co.switch_address = rack.switch_address();
  co.policy = AllocationPolicy::kPartitioned;
  auto client = Client::Connect(co);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto a = (*client)->Allocate(64, 0);
  auto b = (*client)->Allocate(64, 1);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << " " << b.status().ToString();
  const uint64_t first[2] = {*b, 1000 + salt}, second[2] = {0, 2000 + salt};
  ASSERT_TRUE((*client)->Write(*a, first, sizeof(first)).ok());
  ASSERT_TRUE((*client)->Write(*b, second, sizeof(second)).ok());
  uint64_t back[2] = {};
  ASSERT_TRUE((*client)->Read(*b, back, sizeof(back)).ok());
  EXPECT_EQ(back[1], 2000 + salt);
  TraverseOptions to;
  to.mode = ExecutionMode::kOffload;
  auto r = (*client)->Traverse(MustBuild(kSumListProgram), *a, std::vector<uint8_t>(8, 0), to);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
  uint64_t sum = 0;
  ASSERT_GE(r->scratch.size(), 8u);
  std::memcpy(&sum, r->scratch.data(), 8);
  EXPECT_EQ(sum, 3000 + 2 * salt);
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Closes with a reset instead of a FIN: a peer that vanishes.
void ResetClose(int fd) {
  linger l{1, 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

// The bytes a hostile peer sends to one port.
void Attack(uint16_t port, std::mt19937_64& rng) {
  SCOPED_TRACE(fmt::format("port {}", port));
  (void)SendAndClose(port, std::vector<uint8_t>(32, 0));
  (void)SendAndClose(port, std::vector<uint8_t>(64 * 1024, 0xff));
  for (size_t n : {1, 7, 8, 47, 48, 49, 200, 4096, 70000}) (void)SendAndClose(port, std::vector<uint8_t>(n, 0), 20ms);
  for (int i = 0; i < 8; ++i) (void)SendAndClose(port, RandomBytes(rng, 1 + rng() % 5000), 20ms);
  // Handshake-shaped: a truncated hello; a hello then a proof announcing an
  // address far over the limit; a hello with a wrong version; a peer that
  // resets in the middle of a message.
  net::handshake::Hello hello;
  hello.role = net::handshake::Role::kCluster;
  const std::vector<uint8_t> h = net::handshake::EncodeHello(hello);
  (void)SendAndClose(port, std::vector<uint8_t>(h.begin(), h.begin() + 20), 20ms);
  std::vector<uint8_t> oversized = h;
  for (uint8_t b : {0x50, 0x4c, 0x53, 0x48, 1, 0, 3, 0}) oversized.push_back(b);  // proof header
  for (int i = 0; i < 8; ++i) oversized.push_back(0x11);                           // endpoint id
  for (int i = 0; i < 4; ++i) oversized.push_back(0xff);                           // address length
  oversized.resize(oversized.size() + 4096, 0xee);
  (void)SendAndClose(port, oversized, 50ms);
  std::vector<uint8_t> wrong_version = h;
  wrong_version[4] = 99;
  (void)SendAndClose(port, wrong_version, 20ms);
  if (int fd = ConnectRaw(port); fd >= 0) {
    (void)send(fd, h.data(), 30, MSG_NOSIGNAL);
    ResetClose(fd);
  }
}

// Reads exactly n bytes (bounded by `timeout`); fewer if the peer closed.
std::vector<uint8_t> ReadSome(int fd, size_t n, std::chrono::milliseconds timeout) {
  std::vector<uint8_t> out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    uint8_t buf[4096];
    ssize_t got = recv(fd, buf, std::min(sizeof(buf), n - out.size()), 0);
    if (got <= 0) break;
    out.insert(out.end(), buf, buf + got);
  }
  return out;
}

// Whether `port` is a pulse listener: it answers a hello with a challenge.
bool SpeaksPulse(uint16_t port) {
  int fd = ConnectRaw(port);
  if (fd < 0) return false;
  const auto hello = net::handshake::EncodeHello(net::handshake::Hello{});
  (void)send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
  const bool pulse = net::handshake::DecodeChallenge(ReadSome(fd, net::handshake::kChallengeSize, 2s)).ok();
  close(fd);
  return pulse;
}

// Every TCP port the rack's processes listen on.
std::map<std::string, std::vector<uint16_t>> PortsOf(LocalRack& rack, int memnodes) {
  std::map<std::string, std::vector<uint16_t>> ports;
  ports["switch"] = ListeningPorts(rack.switch_process().pid());
  for (int n = 0; n < memnodes; ++n)
    ports[fmt::format("memnode-{}", n)] = ListeningPorts(rack.memnode(static_cast<uint32_t>(n)).pid());
  return ports;
}

void ExpectAllAlive(LocalRack& rack, int memnodes) {
  EXPECT_FALSE(rack.switch_process().Exited()) << rack.switch_process().Log();
  for (int n = 0; n < memnodes; ++n)
    EXPECT_FALSE(rack.memnode(static_cast<uint32_t>(n)).Exited()) << rack.memnode(static_cast<uint32_t>(n)).Log();
}

TEST(WireAttack, ThirtyTwoZeroBytesDoNotKillTheSwitch) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2));
  ASSERT_GE(SendAndClose(rack.switch_port(), std::vector<uint8_t>(32, 0)), 0);
  ASSERT_GE(SendAndClose(rack.switch_port(), std::vector<uint8_t>(64 * 1024, 0xff)), 0);
  ExpectAllAlive(rack, 2);
  ExpectRackServes(rack, 1);
}

TEST(WireAttack, EveryPortOfEveryNodeSurvivesGarbageAndHalfOpenFloods) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2));
  ExpectRackServes(rack, 1);
  std::mt19937_64 rng(19);
  const auto ports = PortsOf(rack, 2);
  size_t count = 0;
  for (const auto& [name, list] : ports) {
    EXPECT_FALSE(list.empty()) << name << " listens on no TCP port";
    for (uint16_t port : list) {
      SCOPED_TRACE(name);
      Attack(port, rng);
      ++count;
    }
  }
  EXPECT_GE(count, 3u);
  std::cerr << "attacked " << count << " ports:";
  for (const auto& [name, list] : ports) {
    std::cerr << " " << name;
    for (uint16_t port : list) std::cerr << " " << port << (SpeaksPulse(port) ? " (pulse)" : " (other)");
  }
  std::cerr << "\n";
  EXPECT_TRUE(std::count(ports.at("switch").begin(), ports.at("switch").end(), rack.switch_port()) == 1);
  ExpectAllAlive(rack, 2);
  ExpectRackServes(rack, 2);

  // A burst of half-open connections (connected, silent) to every port,
  // held open while a new client connects and works: pulse's listener drops
  // the oldest pending handshakes to make room.
  // More than WorkerOptions::max_pending_handshakes (128) on pulse's ports;
  // fewer elsewhere (the test's own descriptors are limited).
  std::vector<int> held;
  for (const auto& [name, list] : ports)
    for (uint16_t port : list)
      for (int i = 0, n = SpeaksPulse(port) ? 200 : 40; i < n; ++i)
        if (int fd = ConnectRaw(port); fd >= 0) held.push_back(fd);
  EXPECT_GE(held.size(), 600u);
  ExpectRackServes(rack, 3);
  for (int fd : held) close(fd);
  ExpectAllAlive(rack, 2);
  ExpectRackServes(rack, 4);
}

TEST(WireAttack, SilentConnectionIsClosedAfterTheHandshakeTimeout) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  int fd = ConnectRaw(rack.switch_port());
  ASSERT_GE(fd, 0);
  // WorkerOptions::handshake_timeout_ms is 5 s; the bound leaves room for a
  // loaded machine, and the wait ends as soon as the switch closes.
  EXPECT_TRUE(PeerClosesWithin(fd, 30s));
  close(fd);
  ExpectAllAlive(rack, 1);
}

// Forwards one connection to `port` and records what the connecting side
// sent, until either side closes.
class RecordingProxy {
 public:
  explicit RecordingProxy(uint16_t upstream) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), len), 0);
    EXPECT_EQ(listen(listen_fd_, 1), 0);
    EXPECT_EQ(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len), 0);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this, upstream] { Run(upstream); });
  }
  ~RecordingProxy() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close(listen_fd_);
  }
  uint16_t port() const { return port_; }
  // Valid once the thread ended (after the destructor's join, or Stop()).
  std::vector<uint8_t> Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return recorded_;
  }

 private:
  void Run(uint16_t upstream) {
    pollfd lp{listen_fd_, POLLIN, 0};
    int client = -1;
    for (int i = 0; i < 1000 && !stop_ && client < 0; ++i)
      if (poll(&lp, 1, 10) > 0) client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) return;
    int server = ConnectRaw(upstream);
    if (server < 0) {
      close(client);
      return;
    }
    pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    while (!stop_) {
      if (poll(fds, 2, 10) <= 0) continue;
      char buf[65536];
      if (fds[0].revents) {
        ssize_t n = recv(client, buf, sizeof(buf), 0);
        if (n <= 0) break;
        recorded_.insert(recorded_.end(), buf, buf + n);
        (void)send(server, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
      }
      if (fds[1].revents) {
        ssize_t n = recv(server, buf, sizeof(buf), 0);
        if (n <= 0) break;
        (void)send(client, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
      }
    }
    close(client);
    close(server);
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<uint8_t> recorded_;
};

TEST(WireAttack, ReplayedHandshakeIsRefused) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  // A genuine handshake (a Worker holding the rack's secret) through a proxy
  // that records the connecting side's bytes: its hello and its proof.
  std::vector<uint8_t> recorded;
  {
    RecordingProxy proxy(rack.switch_port());
    auto worker = net::Worker::Create();
    ASSERT_TRUE(worker.ok()) << worker.status().ToString();
    auto ep = (*worker)->Connect("127.0.0.1", proxy.port(), 10s);
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    (void)(*worker)->Close(*ep);
    recorded = proxy.Stop();
  }
  ASSERT_GT(recorded.size(), net::handshake::kHelloSize);
  // Replayed to the switch: the proof was made for another challenge.
  int fd = ConnectRaw(rack.switch_port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(send(fd, recorded.data(), net::handshake::kHelloSize, MSG_NOSIGNAL),
            static_cast<ssize_t>(net::handshake::kHelloSize));
  auto challenge = ReadSome(fd, net::handshake::kChallengeSize, 10s);
  ASSERT_TRUE(net::handshake::DecodeChallenge(challenge).ok());
  const size_t rest = recorded.size() - net::handshake::kHelloSize;
  ASSERT_EQ(send(fd, recorded.data() + net::handshake::kHelloSize, rest, MSG_NOSIGNAL), static_cast<ssize_t>(rest));
  auto verdict_bytes = ReadSome(fd, 4096, 10s);
  auto verdict = net::handshake::DecodeVerdict(verdict_bytes);
  ASSERT_TRUE(verdict.ok()) << verdict.status().ToString();
  EXPECT_EQ(verdict->code, StatusCodeToWire(Status::Code::kPermissionDenied)) << verdict->text;
  EXPECT_TRUE(PeerClosesWithin(fd, 10s));
  close(fd);
  ExpectAllAlive(rack, 1);
}

}  // namespace
}  // namespace pulse::testing
