// The connection handshake between two Workers (include/pulse/net.h
// "Connections", src/net/handshake.h): who is let in with which key, what
// each side learns about the other, the listener's bound on pending
// handshakes, and the key files.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <optional>

#include "net/handshake.h"
#include "net/test_util.h"

namespace pulse::net::testing {
namespace {

std::vector<uint8_t> Key(uint8_t fill) { return std::vector<uint8_t>(kKeySize, fill); }

WorkerOptions WithSecret(std::vector<uint8_t> secret) {
  WorkerOptions o;
  o.credentials = Credentials{};
  o.credentials->cluster_secret = std::move(secret);
  return o;
}

WorkerOptions AsTenant(uint32_t tenant, std::vector<uint8_t> key) {
  WorkerOptions o;
  o.credentials = Credentials{};
  o.credentials->tenant = tenant;
  o.credentials->tenant_key = std::move(key);
  return o;
}

TEST(NetHandshake, WhoIsLetInWithWhichKey) {
  const auto secret = Key(1);
  struct Case {
    const char* what;
    WorkerOptions listener;
    WorkerOptions client;
    bool accepted;
    PeerKind kind;
    uint32_t tenant;
  };
  const Case cases[] = {
      {"same secret", WithSecret(secret), WithSecret(secret), true, PeerKind::kCluster, 0},
      {"other secret", WithSecret(secret), WithSecret(Key(2)), false, PeerKind::kOpen, 0},
      {"no credentials", WithSecret(secret), WorkerOptions{}, false, PeerKind::kOpen, 0},
      {"tenant key", WithSecret(secret), AsTenant(7, DeriveTenantKey(secret, 7)), true, PeerKind::kTenant, 7},
      {"another tenant's key", WithSecret(secret), AsTenant(7, DeriveTenantKey(secret, 8)), false, PeerKind::kOpen, 0},
      {"open listener, open peer", WorkerOptions{}, WorkerOptions{}, true, PeerKind::kOpen, 0},
      {"open listener, peer with a secret", WorkerOptions{}, WithSecret(secret), false, PeerKind::kOpen, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto listener = MakeWorker(c.listener);
    auto client = MakeWorker(c.client);
    ASSERT_TRUE(listener && client);
    auto port = listener->Listen("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    std::optional<EndpointId> accepted;
    listener->SetAcceptHandler([&](EndpointId ep, const std::string&) { accepted = ep; });
    // The listener runs on a thread of its own until the client is done.
    std::atomic<bool> connect_done{false};
    std::thread driver([&] { (void)listener->RunUntil([&] { return connect_done.load(); }, 10s); });
    Result<EndpointId> ep = client->Connect("127.0.0.1", *port, 5s);
    connect_done = true;
    listener->Wake();
    driver.join();
    if (!c.accepted) {
      ASSERT_FALSE(ep.ok());
      EXPECT_EQ(ep.status().code(), Status::Code::kPermissionDenied) << ep.status().ToString();
      EXPECT_FALSE(accepted.has_value());
      continue;
    }
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    ASSERT_TRUE(accepted.has_value());
    auto identity = listener->PeerOf(*accepted);
    ASSERT_TRUE(identity.ok());
    EXPECT_EQ(identity->kind, c.kind);
    EXPECT_EQ(identity->tenant, c.tenant);
    // A message each way over the UCX endpoints made from the handshake.
    std::optional<std::string> got;
    listener->SetHandler(3, [&](EndpointId from, std::span<const uint8_t> p) {
      got = std::string(p.begin(), p.end());
      (void)listener->Send(from, 4, p);
    });
    std::optional<std::string> echoed;
    client->SetHandler(4, [&](EndpointId, std::span<const uint8_t> p) { echoed = std::string(p.begin(), p.end()); });
    const std::string text = "over ucx";
    ASSERT_TRUE(client->Send(*ep, 3, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size())).ok());
    std::thread serve([&] { (void)listener->RunUntil([&] { return got.has_value(); }, 5s); });
    EXPECT_TRUE(client->RunUntil([&] { return echoed.has_value(); }, 5s).ok());
    serve.join();
    EXPECT_EQ(echoed.value_or(""), text);
  }
}

TEST(NetHandshake, NoListenerWithoutSecretUnlessInsecure) {
  // Not MakeWorker: it allows open listeners.  Empty credentials, so that
  // $PULSE_CLUSTER_SECRET_FILE is not read.
  WorkerOptions none;
  none.credentials = Credentials{};
  auto plain = Worker::Create(none);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE((*plain)->open());
  auto refused = (*plain)->Listen("127.0.0.1", 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition) << refused.status().ToString();

  WorkerOptions insecure = none;
  insecure.insecure = true;
  auto open = Worker::Create(insecure);
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  EXPECT_TRUE((*open)->Listen("127.0.0.1", 0).ok());

  auto secured = Worker::Create(WithSecret(Key(4)));
  ASSERT_TRUE(secured.ok()) << secured.status().ToString();
  EXPECT_FALSE((*secured)->open());
  EXPECT_TRUE((*secured)->Listen("127.0.0.1", 0).ok());
}

TEST(NetHandshake, PendingHandshakesAreBoundedByDroppingTheOldest) {
  WorkerOptions lo = WithSecret(Key(3));
  lo.max_pending_handshakes = 4;
  PeerThread listener(lo);
  ASSERT_TRUE(listener.ok());
  // Ten silent connections: the first six are closed by the listener.
  std::vector<int> fds;
  for (int i = 0; i < 10; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(listener.port());
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    fds.push_back(fd);
    // One at a time, so that "oldest" is well defined.
    ASSERT_TRUE(listener.Call([](Worker& w) { (void)w.RunUntil([] { return false; }, 20ms); }));
  }
  auto client = MakeWorker(WithSecret(Key(3)));
  auto ep = client->Connect("127.0.0.1", listener.port(), 5s);
  EXPECT_TRUE(ep.ok()) << ep.status().ToString();
  int closed = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    char b;
    if (poll(&p, 1, 0) > 0 && recv(fd, &b, 1, MSG_DONTWAIT) == 0) ++closed;
    close(fd);
  }
  EXPECT_GE(closed, 6);
}

TEST(NetHandshake, KeyFilesMustBeOwnerOnlyAndExactlyOneKey) {
  const std::string dir = ::testing::TempDir() + "/pulse-keys-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/secret.key";
  std::filesystem::remove(path);
  ASSERT_TRUE(WriteKeyFile(path, Key(9)).ok());
  EXPECT_EQ(WriteKeyFile(path, Key(9)).code(), Status::Code::kAlreadyExists);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto key = ReadKeyFile(path);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(*key, Key(9));
  chmod(path.c_str(), 0644);
  EXPECT_EQ(ReadKeyFile(path).status().code(), Status::Code::kInvalidArgument);
  chmod(path.c_str(), 0600);
  truncate(path.c_str(), 31);
  EXPECT_EQ(ReadKeyFile(path).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(ReadKeyFile(dir).status().code(), Status::Code::kInvalidArgument);  // a directory
  EXPECT_EQ(ReadKeyFile(dir + "/none").status().code(), Status::Code::kNotFound);
  std::filesystem::remove_all(dir);
  // Tenant keys differ per tenant and per secret.
  EXPECT_NE(DeriveTenantKey(Key(1), 1), DeriveTenantKey(Key(1), 2));
  EXPECT_NE(DeriveTenantKey(Key(1), 1), DeriveTenantKey(Key(2), 1));
  EXPECT_EQ(DeriveTenantKey(Key(1), 1).size(), kKeySize);
}

}  // namespace
}  // namespace pulse::net::testing
