// Transport selection: TCP only (UCX_TLS in a child process's environment,
// WorkerOptions::transports here), and shared memory with error handling.
#include <signal.h>

#include <optional>

#include "net/test_util.h"

namespace pulse::net::testing {
namespace {

bool Uses(const std::string& description, const std::string& transport) {
  return description.find(" " + transport + "/") != std::string::npos ||
         description.find(":" + transport + "/") != std::string::npos;
}

void PingPongSizes(EchoClient& c) {
  uint32_t seed = 0;
  for (size_t size : {size_t{0}, size_t{1}, size_t{8192}, size_t{1} << 20}) {
    auto payload = Pattern(size, ++seed);
    ASSERT_TRUE(c.RoundTrip(payload) == payload) << "size " << size;
  }
}

TEST(NetTransport, PingPongWithPeerProcessRestrictedToTcpByEnv) {
  PeerProcess peer("echo", {"UCX_TLS=tcp"});
  ASSERT_NE(peer.port(), 0);
  WorkerOptions o;
  o.transports = "tcp";
  EchoClient c(peer.port(), o);
  ASSERT_TRUE(c.ok());
  PingPongSizes(c);
  auto mine = c.w->DescribeEndpoint(c.ep);
  ASSERT_TRUE(mine.ok());
  std::string theirs = c.PeerDescription();
  for (const std::string& d : {*mine, theirs}) {
    EXPECT_TRUE(Uses(d, "tcp")) << d;
    EXPECT_FALSE(Uses(d, "sysv") || Uses(d, "posix") || Uses(d, "cma")) << d;
  }
}

// Shared memory needs its error handling switched on in the environment.
const std::vector<std::string> kShmEnv = {"UCX_POSIX_ERROR_HANDLING=y",
                                          "UCX_SYSV_ERROR_HANDLING=y"};

TEST(NetTransport, SharedMemoryWithErrorHandlingEnabled) {
  EXPECT_TRUE(RunInChild(kShmEnv, [] {
    PeerThread server({}, InstallEcho);
    ASSERT_TRUE(server.ok());
    EchoClient c(server.port());
    ASSERT_TRUE(c.ok());
    PingPongSizes(c);
    auto d = c.w->DescribeEndpoint(c.ep);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(Uses(*d, "sysv") || Uses(*d, "posix")) << *d;
  }));
}

TEST(NetTransport, KilledSharedMemoryPeerIsDetected) {
  EXPECT_TRUE(RunInChild(kShmEnv, [] {
    PeerProcess peer("echo");  // inherits the environment
    ASSERT_NE(peer.port(), 0);
    EchoClient c(peer.port());
    ASSERT_TRUE(c.ok());
    std::optional<Status> why;
    c.w->SetDisconnectHandler([&](EndpointId, const Status& s) { why = s; });
    ASSERT_EQ(c.RoundTrip({1, 2, 3}).size(), 3u);
    auto d = c.w->DescribeEndpoint(c.ep);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(Uses(*d, "sysv") || Uses(*d, "posix")) << *d;
    peer.Signal(SIGKILL);
    ASSERT_GE(peer.Wait(10s), 0);
    auto start = Clock::now();
    ASSERT_TRUE(c.w->RunUntil([&] { return why.has_value(); }, 30s).ok());
    EXPECT_LT(Clock::now() - start, 10s);
    const uint8_t b[1] = {0};
    EXPECT_EQ(c.w->Send(c.ep, kEcho, b).code(), Status::Code::kUnavailable);
  }));
}

TEST(NetTransport, SharedMemoryIsUsedByDefault) {
  const char* posix = getenv("UCX_POSIX_ERROR_HANDLING");
  const char* sysv = getenv("UCX_SYSV_ERROR_HANDLING");
  ASSERT_NE(posix, nullptr) << "pulse::net did not set UCX_POSIX_ERROR_HANDLING";
  ASSERT_NE(sysv, nullptr);
  if (std::string(posix) != "y" || std::string(sysv) != "y" || getenv("UCX_TLS") != nullptr) {
    GTEST_SKIP() << "the environment overrides pulse::net's transport defaults";
  }
  PeerProcess peer("echo");
  ASSERT_NE(peer.port(), 0);
  EchoClient c(peer.port());
  ASSERT_TRUE(c.ok());
  PingPongSizes(c);
  auto d = c.w->DescribeEndpoint(c.ep);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(Uses(*d, "sysv") || Uses(*d, "posix")) << *d;
}

TEST(NetTransport, UnknownUcxSettingIsAnError) {
  WorkerOptions o;
  o.ucx_config = {{"NO_SUCH_SETTING_XYZ", "1"}};
  EXPECT_EQ(Worker::Create(o).status().code(), Status::Code::kInvalidArgument);
  o.ucx_config = {{"POSIX_ERROR_HANDLING", "y"}};  // a transport setting
  EXPECT_EQ(Worker::Create(o).status().code(), Status::Code::kInvalidArgument);
  o.ucx_config = {{"RNDV_THRESH", "16K"}};
  EXPECT_TRUE(Worker::Create(o).ok());
}

}  // namespace
}  // namespace pulse::net::testing
