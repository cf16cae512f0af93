// One-sided Get/Put on registered memory, against local memcpy.
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>

#include "net/test_util.h"

namespace pulse::net::testing {
namespace {

// A peer that owns a registered region and sends (addr, size, rkey) to each
// client that connects.
struct RegionServer {
  std::vector<uint8_t> memory;
  MemoryRegion region;
  std::unique_ptr<PeerThread> thread;

  explicit RegionServer(size_t size, const WorkerOptions& options = {}) : memory(size) {
    for (size_t i = 0; i < size; ++i) memory[i] = PatternByte(i);
    thread = std::make_unique<PeerThread>(options, [this](Worker& w) {
      auto r = w.RegisterMemory(memory.data(), memory.size());
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) return;
      region = std::move(r).value();
      Worker* self = &w;
      w.SetAcceptHandler([this, self](EndpointId ep, const std::string&) {
        std::vector<uint8_t> msg(16 + region.rkey().size());
        uint64_t addr = region.remote_address();
        uint64_t size = region.size();
        std::memcpy(msg.data(), &addr, 8);
        std::memcpy(msg.data() + 8, &size, 8);
        std::memcpy(msg.data() + 16, region.rkey().data(), region.rkey().size());
        EXPECT_TRUE(self->Send(ep, kRegion, std::move(msg)).ok());
      });
    });
  }
  ~RegionServer() {
    // The region must go before its Worker: release it on the worker thread.
    if (thread != nullptr) thread->Call([this](Worker&) { region = MemoryRegion(); });
    thread.reset();
  }
};

// The client side: connects and imports the peer's region.
struct RegionClient {
  std::unique_ptr<Worker> w;
  EndpointId ep = kInvalidEndpoint;
  uint64_t base = 0;
  uint64_t size = 0;
  RemoteKey rkey;
  std::optional<Status> disconnect;
  std::vector<uint8_t> packed;

  explicit RegionClient(uint16_t port, const WorkerOptions& options = {})
      : w(MakeWorker(options)) {
    if (w == nullptr) return;
    w->SetHandler(kRegion, [this](EndpointId, std::span<const uint8_t> p) {
      ASSERT_GT(p.size(), 16u);
      std::memcpy(&base, p.data(), 8);
      std::memcpy(&size, p.data() + 8, 8);
      packed.assign(p.begin() + 16, p.end());
    });
    w->SetDisconnectHandler([this](EndpointId, const Status& why) { disconnect = why; });
    auto r = w->Connect("127.0.0.1", port, 10s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return;
    ep = *r;
    Status s = w->RunUntil([this] { return !packed.empty(); }, 10s);
    EXPECT_TRUE(s.ok()) << s.ToString();
    auto k = w->ImportRkey(ep, packed);
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    if (k.ok()) rkey = std::move(k).value();
  }
  ~RegionClient() { rkey = RemoteKey(); }
  bool ok() const { return rkey.valid(); }
};

void GetAndPutMatchMemcpy(RmaPath path) {
  const size_t kSize = 4 << 20;
  RegionServer server(kSize);
  ASSERT_TRUE(server.thread->ok());
  WorkerOptions o;
  o.rma_path = path;
  RegionClient c(server.thread->port(), o);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c.size, kSize);
  if (path != RmaPath::kAuto) {
    EXPECT_EQ(c.rkey.uses_ucx_rma(), path == RmaPath::kUcx);
  }

  // Get: compare with the pattern the server wrote.
  std::mt19937_64 rng(7);
  const size_t lens[] = {1, 8, 100, 4096, 8193, 65536, 1 << 20, kSize};
  for (size_t len : lens) {
    size_t off = len == kSize ? 0 : rng() % (kSize - len);
    std::vector<uint8_t> got(len, 0xee), want(len);
    for (size_t i = 0; i < len; ++i) want[i] = PatternByte(off + i);
    Status s = c.w->Get(c.rkey, c.base + off, got.data(), len, 10s);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(got == want) << "Get of " << len << " bytes at " << off;
  }

  // Put random bytes, then compare the server's memory with a local memcpy
  // into a mirror of it.
  std::vector<uint8_t> mirror(server.memory.size());
  for (size_t i = 0; i < kSize; ++i) mirror[i] = PatternByte(i);
  for (size_t len : lens) {
    size_t off = len == kSize ? 0 : rng() % (kSize - len);
    std::vector<uint8_t> data(len);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    Status s = c.w->Put(c.rkey, c.base + off, data.data(), len, 10s);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::memcpy(mirror.data() + off, data.data(), len);
    // Read back through the fabric too.
    std::vector<uint8_t> back(len);
    ASSERT_TRUE(c.w->Get(c.rkey, c.base + off, back.data(), len, 10s).ok());
    ASSERT_TRUE(back == data) << "Put/Get of " << len << " bytes at " << off;
  }
  bool same = false;
  ASSERT_TRUE(server.thread->Call([&](Worker&) { same = server.memory == mirror; }));
  EXPECT_TRUE(same);
  EXPECT_EQ(c.w->counters().rma_ops, 3 * std::size(lens));
}

TEST(NetRma, GetAndPutMatchMemcpyDefaultPath) { GetAndPutMatchMemcpy(RmaPath::kAuto); }
TEST(NetRma, GetAndPutMatchMemcpyOverUcxRma) { GetAndPutMatchMemcpy(RmaPath::kUcx); }
TEST(NetRma, GetAndPutMatchMemcpyOverMessages) { GetAndPutMatchMemcpy(RmaPath::kMessages); }

TEST(NetRma, RangesAreCheckedOnBothSides) {
  RegionServer server(8192);
  ASSERT_TRUE(server.thread->ok());
  WorkerOptions o;
  o.rma_path = RmaPath::kMessages;
  RegionClient c(server.thread->port(), o);
  ASSERT_TRUE(c.ok());
  uint8_t buf[16];
  // Outside the key's region: refused locally.
  EXPECT_EQ(c.w->Get(c.rkey, c.base + 8190, buf, 16, 1s).code(), Status::Code::kOutOfRange);
  EXPECT_EQ(c.w->Get(c.rkey, c.base - 1, buf, 1, 1s).code(), Status::Code::kOutOfRange);
  EXPECT_EQ(c.w->Put(c.rkey, c.base + 8192, buf, 1, 1s).code(), Status::Code::kOutOfRange);
  // The peer drops the region: refused remotely, endpoint stays up.
  ASSERT_TRUE(server.thread->Call([&](Worker&) { server.region = MemoryRegion(); }));
  EXPECT_EQ(c.w->Get(c.rkey, c.base, buf, 16, 10s).code(), Status::Code::kPermissionDenied);
  EXPECT_EQ(c.w->Put(c.rkey, c.base, buf, 16, 10s).code(), Status::Code::kPermissionDenied);
  EXPECT_TRUE(c.w->IsConnected(c.ep));
}

TEST(NetRma, AsyncOperationsCompleteOnceEach) {
  RegionServer server(1 << 20);
  ASSERT_TRUE(server.thread->ok());
  RegionClient c(server.thread->port());
  ASSERT_TRUE(c.ok());
  const int kOps = 64;
  const size_t kLen = 4096;
  std::vector<std::vector<uint8_t>> bufs(kOps, std::vector<uint8_t>(kLen));
  std::vector<int> done(kOps, 0);
  int completed = 0;
  for (int i = 0; i < kOps; ++i) {
    Status s = c.w->GetAsync(c.rkey, c.base + i * kLen, bufs[i].data(), kLen,
                             [&, i](const Status& st) {
                               EXPECT_TRUE(st.ok()) << st.ToString();
                               ++done[i];
                               ++completed;
                             });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_EQ(completed, 0) << "completion ran inside the issuing call";
  ASSERT_TRUE(c.w->RunUntil([&] { return completed == kOps; }, 20s).ok());
  for (int i = 0; i < kOps; ++i) {
    EXPECT_EQ(done[i], 1);
    for (size_t j = 0; j < kLen; ++j) ASSERT_EQ(bufs[i][j], PatternByte(i * kLen + j));
  }
  // PutAsync + Flush: visible at the peer afterwards.
  std::vector<uint8_t> data(kLen, 0xab);
  bool put_done = false;
  ASSERT_TRUE(c.w->PutAsync(c.rkey, c.base, data.data(), kLen, [&](const Status& st) {
                   EXPECT_TRUE(st.ok());
                   put_done = true;
                 }).ok());
  ASSERT_TRUE(c.w->Flush(c.ep, 10s).ok());
  ASSERT_TRUE(c.w->RunUntil([&] { return put_done; }, 10s).ok());
  bool same = false;
  ASSERT_TRUE(server.thread->Call(
      [&](Worker&) { same = std::memcmp(server.memory.data(), data.data(), kLen) == 0; }));
  EXPECT_TRUE(same);
}

// Get/Put over pulse's messages with requests and replies lost, duplicated
// and reordered in both directions: every read matches a local shadow of the
// region (so no stale duplicate of an older write was applied after a newer
// one), the requester re-sent what went unanswered, and the peer answered
// writes it had already applied without applying them again.
TEST(NetRma, ReadsAndWritesSurviveLossDuplicationAndReordering) {
  const char* scale_env = std::getenv("PULSE_TEST_SCALE");
  const double scale = scale_env != nullptr && std::atof(scale_env) > 0 ? std::atof(scale_env) : 1.0;
  const int kOps = std::max(100, static_cast<int>(800 * scale));
  const size_t kSize = 64 << 10;
  // Only one-sided traffic: the region announcement (a user message) is left alone.
  const FaultInjection faults{.loss = 0.1, .duplicate = 0.1, .reorder = 0.2, .hold_us = 1000,
                              .seed = 11, .message_ids = {kRegion + 1000}, .one_sided = true};
  WorkerOptions so;
  so.faults = faults;
  RegionServer server(kSize, so);
  ASSERT_TRUE(server.thread->ok());
  WorkerOptions o;
  o.faults = faults;
  o.faults->seed = 12;
  o.rma_retransmit_us = 2000;
  RegionClient c(server.thread->port(), o);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c.rkey.uses_ucx_rma()) << "one-sided faults need the message path";

  std::vector<uint8_t> shadow(kSize);
  for (size_t i = 0; i < kSize; ++i) shadow[i] = PatternByte(i);
  std::mt19937_64 rng(5);
  // A small hot range, so that writes overwrite each other often.
  auto pick = [&](size_t* off, size_t* len) {
    *len = 1 + rng() % (rng() % 8 == 0 ? 8192 : 64);
    const size_t span = rng() % 2 == 0 ? 512 : kSize;
    *off = rng() % (std::min(span, kSize) - std::min(*len, span - 1));
    if (*off + *len > kSize) *off = kSize - *len;
  };
  for (int i = 0; i < kOps; ++i) {
    size_t off = 0, len = 0;
    pick(&off, &len);
    if (rng() % 2 == 0) {
      std::vector<uint8_t> data(len);
      for (auto& b : data) b = static_cast<uint8_t>(rng());
      Status s = c.w->Put(c.rkey, c.base + off, data.data(), len, 10s);
      ASSERT_TRUE(s.ok()) << "op " << i << ": " << s.ToString();
      std::memcpy(shadow.data() + off, data.data(), len);
    } else {
      std::vector<uint8_t> got(len, 0xee);
      Status s = c.w->Get(c.rkey, c.base + off, got.data(), len, 10s);
      ASSERT_TRUE(s.ok()) << "op " << i << ": " << s.ToString();
      ASSERT_TRUE(std::equal(got.begin(), got.end(), shadow.begin() + off))
          << "op " << i << ": Get of " << len << " bytes at " << off;
    }
  }
  // Asynchronous reads in flight together, each completed exactly once.
  const int kAsync = 32;
  const size_t kLen = kSize / kAsync;
  std::vector<std::vector<uint8_t>> bufs(kAsync, std::vector<uint8_t>(kLen));
  std::vector<int> done(kAsync, 0);
  for (int i = 0; i < kAsync; ++i) {
    ASSERT_TRUE(c.w->GetAsync(c.rkey, c.base + i * kLen, bufs[i].data(), kLen, [&, i](const Status& st) {
                   EXPECT_TRUE(st.ok()) << st.ToString();
                   ++done[i];
                 }).ok());
  }
  ASSERT_TRUE(c.w->RunUntil([&] { return std::count(done.begin(), done.end(), 0) == 0; }, 20s).ok());
  for (int i = 0; i < kAsync; ++i) {
    EXPECT_EQ(done[i], 1);
    ASSERT_TRUE(std::equal(bufs[i].begin(), bufs[i].end(), shadow.begin() + i * kLen)) << "async read " << i;
  }
  bool same = false;
  uint64_t duplicates = 0, server_faults = 0;
  ASSERT_TRUE(server.thread->Call([&](Worker& w) {
    same = server.memory == shadow;
    duplicates = w.counters().rma_duplicates;
    server_faults = w.counters().faults_dropped + w.counters().faults_duplicated + w.counters().faults_reordered;
  }));
  EXPECT_TRUE(same);
  const Counters& k = c.w->counters();
  EXPECT_GT(k.faults_dropped, 0u);
  EXPECT_GT(k.faults_duplicated, 0u);
  EXPECT_GT(k.faults_reordered, 0u);
  EXPECT_GT(server_faults, 0u) << "replies must have been faulted too";
  EXPECT_GT(k.rma_retransmissions, 0u);
  EXPECT_GT(duplicates, 0u) << "some write must have arrived twice";
  EXPECT_EQ(k.messages_sent, 0u) << "one-sided requests are not user messages";
}

TEST(NetRma, ImportRejectsBytesThatAreNotAnRkey) {
  RegionServer server(4096);
  ASSERT_TRUE(server.thread->ok());
  RegionClient c(server.thread->port());
  ASSERT_TRUE(c.ok());
  uint8_t junk[36] = {'n', 'o', 'p', 'e', 4, 0, 0, 0};
  EXPECT_EQ(c.w->ImportRkey(c.ep, junk).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(c.w->ImportRkey(c.ep, std::span<const uint8_t>()).status().code(),
            Status::Code::kInvalidArgument);
  // A real key, truncated.
  std::vector<uint8_t> real;
  ASSERT_TRUE(server.thread->Call([&](Worker&) {
    real.assign(server.region.rkey().begin(), server.region.rkey().end());
  }));
  ASSERT_GT(real.size(), 33u);
  real.pop_back();
  EXPECT_EQ(c.w->ImportRkey(c.ep, real).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(c.w->ImportRkey(999, junk).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(c.w->RegisterMemory(nullptr, 10).status().code(), Status::Code::kInvalidArgument);
  RemoteKey empty;
  uint8_t b[4];
  EXPECT_EQ(c.w->Get(empty, 0, b, 4, 1s).code(), Status::Code::kInvalidArgument);
}

// A peer process that is stopped (SIGSTOP) cannot serve a Get on transports
// that need its CPU (TCP here); the Get must time out, fail the endpoint and
// leave the worker usable.
TEST(NetRma, GetFromStoppedPeerProcessTimesOut) {
  PeerProcess peer("rma");
  ASSERT_NE(peer.port(), 0);
  RegionClient c(peer.port());
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c.size, kPeerRegionSize);
  std::vector<uint8_t> buf(65536);
  ASSERT_TRUE(c.w->Get(c.rkey, c.base, buf.data(), buf.size(), 10s).ok());
  ASSERT_EQ(buf[5], PatternByte(5));

  peer.Signal(SIGSTOP);
  auto start = Clock::now();
  Status s = c.w->Get(c.rkey, c.base, buf.data(), buf.size(), 300ms);
  auto took = Clock::now() - start;
  if (s.ok()) {
    peer.Signal(SIGCONT);
    GTEST_SKIP() << "this transport completed a Get without the peer's CPU (true one-sided)";
  }
  EXPECT_EQ(s.code(), Status::Code::kTimeout) << s.ToString();
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 5s);
  ASSERT_TRUE(c.disconnect.has_value());
  EXPECT_EQ(c.disconnect->code(), Status::Code::kTimeout);
  EXPECT_FALSE(c.w->IsConnected(c.ep));
  EXPECT_EQ(c.w->Get(c.rkey, c.base, buf.data(), 8, 1s).code(), Status::Code::kUnavailable);
  peer.Signal(SIGCONT);

  // The peer, resumed, finds the request of a closed endpoint; it must
  // survive and keep serving.
  RegionClient again(peer.port());
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again.w->Get(again.rkey, again.base + 64, buf.data(), 64, 10s).ok());
  EXPECT_EQ(buf[0], PatternByte(64));
  EXPECT_EQ(peer.Wait(0ms), -1) << "the peer process exited";
}

}  // namespace
}  // namespace pulse::net::testing
