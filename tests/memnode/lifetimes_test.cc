// Far-memory lifetimes over real processes: a client's session memory is
// reclaimed when it exits and when it is killed (pool use returns to its
// level before), durable roots survive both and open in a new client, and
// repeated large runs no longer exhaust the pool.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "pulse/client.h"
#include "pulse/net.h"
#include "support/local_rack.h"

namespace pulse::testing {
namespace {

constexpr uint64_t kPoolMib = 8;

// A rack of a switch and two memory nodes whose sessions expire 300 ms
// after their client's last connection went away.
bool StartRack(LocalRack& rack) {
  if (!rack.StartSwitch()) return false;
  for (uint32_t n = 0; n < 2; ++n) rack.StartMemNode(n, kPoolMib, {"--session-grace-ms", "300"});
  return rack.Join(2);
}

struct Use {
  uint64_t pool_used = 0;
  uint64_t session = 0;  // tenant 1's session bytes
  uint64_t durable = 0;  // tenant 1's durable bytes
  bool operator==(const Use&) const = default;
};

Use PoolUse(LocalRack& rack) {
  Use u;
  for (uint32_t n = 0; n < 2; ++n) {
    json s = rack.MemNodeStats(n);
    EXPECT_TRUE(s.value("ok", false)) << s.dump();
    const json& c = s["counters"];
    u.pool_used += c.value("pool_used", uint64_t{0});
    if (c.contains("tenants") && c["tenants"].contains("1")) {
      u.session += c["tenants"]["1"].value("session_bytes", uint64_t{0});
      u.durable += c["tenants"]["1"].value("durable_bytes", uint64_t{0});
    }
  }
  return u;
}

// Waits until the pool use is `want` (sessions expire in the background).
Use WaitForUse(LocalRack& rack, const Use& want) {
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  Use u = PoolUse(rack);
  while (!(u == want) && Clock::now() < deadline) {
    rack.cpu().Pump(std::chrono::milliseconds(50));
    u = PoolUse(rack);
  }
  return u;
}

ClientOptions Options(LocalRack& rack) {
  ClientOptions o;
  o.switch_address = rack.switch_address();
  o.tenant = 1;
  return o;
}

// Fills most of both pools with objects and writes each.
Status FillPools(Client& c, uint64_t bytes_per_node) {
  std::vector<uint8_t> data(64 * 1024, 0x5a);
  for (uint64_t done = 0; done < 2 * bytes_per_node; done += data.size()) {
    PULSE_ASSIGN_OR_RETURN(uint64_t addr, c.Allocate(data.size()));
    PULSE_RETURN_IF_ERROR(c.Write(addr, data.data(), data.size()));
  }
  return Status::Ok();
}

TEST(Lifetimes, RepeatedLargeRunsDoNotExhaustThePool) {
  LocalRack rack;
  ASSERT_TRUE(StartRack(rack));
  const Use before = PoolUse(rack);
  // Each run takes 6 of each node's 8 MiB: before sessions, the second run
  // failed with "pool exhausted".
  for (int run = 0; run < 4; ++run) {
    auto c = Client::Connect(Options(rack));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    Status s = FillPools(**c, 6ull << 20);
    ASSERT_TRUE(s.ok()) << "run " << run << ": " << s.ToString();
  }
  EXPECT_EQ(PoolUse(rack), before);
}

TEST(Lifetimes, ExitReclaimsSessionMemoryAndKeepsDurableRoots) {
  LocalRack rack;
  ASSERT_TRUE(StartRack(rack));
  const Use before = PoolUse(rack);
  const uint64_t pattern = 0x1122334455667788;
  uint64_t root = 0;
  {
    auto c = Client::Connect(Options(rack));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_TRUE(FillPools(**c, 2ull << 20).ok());
    EXPECT_GT(PoolUse(rack).session, 0u);
  }
  // A clean exit ends the session at once.
  EXPECT_EQ(PoolUse(rack), before);
  {
    auto c = Client::Connect(Options(rack));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto addr = (*c)->Allocate(64);
    ASSERT_TRUE(addr.ok()) << addr.status().ToString();
    root = *addr;
    ASSERT_TRUE((*c)->Write(root, &pattern, 8).ok());
    ASSERT_TRUE((*c)->PublishRoot("kept", root).ok());
    // Memory allocated after publishing belongs to the root too.
    auto later = (*c)->Allocate(2 << 20);
    ASSERT_TRUE(later.ok()) << later.status().ToString();
    ASSERT_TRUE((*c)->Write(root + 8, &*later, 8).ok());
    ASSERT_TRUE((*c)->Write(*later, &pattern, 8).ok());
  }
  const Use kept = PoolUse(rack);
  EXPECT_EQ(kept.session, 0u);
  EXPECT_GE(kept.durable, 2u << 20);
  {
    auto c = Client::Connect(Options(rack));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto opened = (*c)->OpenRoot("kept");
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    EXPECT_EQ(*opened, root);
    uint64_t v = 0, later = 0;
    ASSERT_TRUE((*c)->Read(root, &v, 8).ok());
    EXPECT_EQ(v, pattern);
    ASSERT_TRUE((*c)->Read(root + 8, &later, 8).ok());
    ASSERT_TRUE((*c)->Read(later, &v, 8).ok());
    EXPECT_EQ(v, pattern);
    ASSERT_TRUE((*c)->DropRoot("kept").ok());
    EXPECT_EQ((*c)->OpenRoot("kept").status().code(), Status::Code::kNotFound);
  }
  EXPECT_EQ(PoolUse(rack), before);
}

TEST(Lifetimes, RestartedNodeKeepsDurableMemoryAndReclaimsSessionsNobodyResumes) {
  LocalRack rack;
  ASSERT_TRUE(StartRack(rack));
  const Use before = PoolUse(rack);
  const net::EndpointId ep = rack.view(0).ep;
  json gone = rack.cpu().Call(ep, {{"op", "alloc"}, {"bytes", 1 << 20}, {"tenant", 1}, {"session", 41}});
  ASSERT_TRUE(gone.value("ok", false)) << gone.dump();
  json back = rack.cpu().Call(ep, {{"op", "alloc"}, {"bytes", 1 << 20}, {"tenant", 1}, {"session", 42}});
  ASSERT_TRUE(back.value("ok", false)) << back.dump();
  json kept = rack.cpu().Call(ep, {{"op", "alloc"}, {"bytes", 1 << 20}, {"tenant", 1}, {"root", "r"}});
  ASSERT_TRUE(kept.value("ok", false)) << kept.dump();
  const uint64_t value = 0xabcdef;
  ASSERT_TRUE(rack.Put(0, kept["base"].get<uint64_t>(), &value, 8).ok());

  rack.memnode(0).Signal(SIGKILL);
  ASSERT_NE(rack.memnode(0).Wait(10s), -1);
  rack.ForgetMemNode(0);
  // A restored grace that outlasts the restart and the rejoin, so that
  // resuming in time is certain under load; waiting for the other session
  // to expire takes as long.
  rack.StartMemNode(0, kPoolMib, {"--session-grace-ms", "300", "--restored-session-grace-ms", "5000"});
  ASSERT_TRUE(rack.Join(2));
  // Session 42's client comes back within the grace (any request naming it);
  // session 41's never does.
  json key = rack.cpu().Call(rack.view(0).ep,
                             {{"op", "key"}, {"addr", back["base"]}, {"tenant", 1}, {"session", 42}});
  ASSERT_TRUE(key.value("ok", false)) << key.dump();
  const Use want{before.pool_used + (2u << 20), 1u << 20, 1u << 20};
  EXPECT_EQ(WaitForUse(rack, want), want);
  uint64_t seen = 0;
  ASSERT_TRUE(rack.Get(0, kept["base"].get<uint64_t>(), &seen, 8).ok());
  EXPECT_EQ(seen, value);
  EXPECT_EQ(rack.KeyFor(0, gone["base"].get<uint64_t>()).status().code(), Status::Code::kNotFound);
}

// The child: one client publishes a root, another fills memory of its
// session; it reports ready on `ready_fd` and waits to be killed with both
// clients alive.  Never returns.
[[noreturn]] void Child(int address_fd, int ready_fd) {
  char buf[4096] = {};
  const ssize_t n = read(address_fd, buf, sizeof(buf) - 1);
  auto fail = [&] {
    (void)!write(ready_fd, "e", 1);
    _exit(1);
  };
  if (n <= 0) fail();
  // "<switch address>\n<cluster secret file>": the rack made its secret
  // after this process was forked.
  const std::string message(buf, static_cast<size_t>(n));
  const size_t newline = message.find('\n');
  if (newline == std::string::npos) fail();
  setenv(net::kSecretFileEnvironmentVariable, message.substr(newline + 1).c_str(), 1);
  ClientOptions o;
  o.switch_address = message.substr(0, newline);
  auto publisher = Client::Connect(o);
  auto filler = Client::Connect(o);
  if (!publisher.ok() || !filler.ok()) fail();
  auto root = (*publisher)->Allocate(64);
  const uint64_t pattern = 0xfeedface;
  if (!root.ok() || !(*publisher)->Write(*root, &pattern, 8).ok() ||
      !(*publisher)->PublishRoot("survivor", *root).ok())
    fail();
  if (!FillPools(**filler, 2ull << 20).ok()) fail();
  (void)!write(ready_fd, "r", 1);
  for (;;) pause();
}

TEST(Lifetimes, KilledClientsSessionIsReclaimedAfterItsLease) {
  // Fork before this process has any fabric: the child is a plain client.
  int address[2], ready[2];
  ASSERT_EQ(pipe(address), 0);
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) Child(address[0], ready[1]);
  LocalRack rack;
  ASSERT_TRUE(StartRack(rack));
  const Use before = PoolUse(rack);
  const char* secret = getenv(net::kSecretFileEnvironmentVariable);
  ASSERT_NE(secret, nullptr) << "the rack names no cluster secret";
  const std::string addr = rack.switch_address() + "\n" + secret;
  ASSERT_EQ(write(address[1], addr.data(), addr.size()), static_cast<ssize_t>(addr.size()));
  char state = 0;
  ASSERT_EQ(read(ready[0], &state, 1), 1);
  ASSERT_EQ(state, 'r') << "the child could not fill the pools";
  const Use running = PoolUse(rack);
  EXPECT_GE(running.session, 4u << 20);
  EXPECT_GT(running.durable, 0u);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  // Its connections fail, the 300 ms lease runs out, the session memory
  // comes back; the root stays.
  const Use want{before.pool_used + running.durable, 0, running.durable};
  EXPECT_EQ(WaitForUse(rack, want), want);
  auto c = Client::Connect(Options(rack));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto opened = (*c)->OpenRoot("survivor");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  uint64_t v = 0;
  ASSERT_TRUE((*c)->Read(*opened, &v, 8).ok());
  EXPECT_EQ(v, 0xfeedfaceu);
}

// Sets an environment variable for a scope (the rack's processes inherit it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A key kept from before a free does not reach the bytes the next tenant
// gets there (docs/security.md, "Keys of freed memory").  Over TCP one-sided
// access takes pulse's message path, which names a registration by a random
// id that dies with it.  (On CMA, UCX's shared-memory RMA between processes
// of one user, no key is checked at all: not a boundary, see the doc.)
TEST(Lifetimes, KeyOfFreedMemoryDoesNotReachTheNextTenantsBytes) {
  ScopedEnv tcp("UCX_TLS", "tcp");
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  json a = rack.Alloc(0, 4096, 1);
  ASSERT_TRUE(a.value("ok", false)) << a.dump();
  const uint64_t base = a["base"].get<uint64_t>();
  auto old = rack.KeyFor(0, base, 1);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  std::vector<uint8_t> mine(4096, 0x11);
  ASSERT_TRUE(rack.cpu().worker().Put(old->key, old->remote, mine.data(), mine.size(), 10s).ok());
  json f = rack.cpu().Call(rack.view(0).ep, {{"op", "free"}, {"base", base}, {"tenant", 1}});
  ASSERT_TRUE(f.value("ok", false)) << f.dump();

  json b = rack.Alloc(0, 4096, 2);
  ASSERT_TRUE(b.value("ok", false)) << b.dump();
  ASSERT_EQ(b["base"].get<uint64_t>(), base);  // the same bytes (first fit)
  const std::vector<uint8_t> theirs(4096, 0xcd);
  ASSERT_TRUE(rack.Put(0, base, theirs.data(), theirs.size(), 2).ok());

  std::vector<uint8_t> seen(4096, 0);
  Status read = rack.cpu().worker().Get(old->key, old->remote, seen.data(), seen.size(), 10s);
  EXPECT_EQ(read.code(), Status::Code::kPermissionDenied) << read.ToString();
  EXPECT_EQ(seen, std::vector<uint8_t>(4096, 0));
  Status write = rack.cpu().worker().Put(old->key, old->remote, mine.data(), mine.size(), 10s);
  EXPECT_EQ(write.code(), Status::Code::kPermissionDenied) << write.ToString();
  ASSERT_TRUE(rack.Get(0, base, seen.data(), seen.size(), 2).ok());
  EXPECT_EQ(seen, theirs);
}

}  // namespace
}  // namespace pulse::testing
