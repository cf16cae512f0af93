// The ring request path (src/net/ring_*.h): the entry format against its
// rules, and a RingHost on its own thread serving RingClients over the
// real fabric: wrap-around, credits at exactly full, torn and malformed
// entries, a client that dies mid-write, two tenants, sleep and wake-up,
// and the client's wait word (a blocked client is woken by its answers).
#include <algorithm>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "client/event_loop.h"
#include "client/ring_sender.h"
#include "net/ring_client.h"
#include "net/ring_format.h"
#include "net/ring_host.h"
#include "net/test_util.h"

namespace pulse::net::ring {
namespace {

using namespace std::chrono_literals;
using net::testing::MakeWorker;
using net::testing::Pattern;

// The layout the fabric tests run with: PULSE_RING_LAYOUT=double (ctest
// RingDoubleLayer.ring_test) runs them over double-layer rings.
Layout TestLayout() {
  const char* v = std::getenv("PULSE_RING_LAYOUT");
  return v != nullptr && std::string(v) == "double" ? Layout::kDoubleLayer : Layout::kSlots;
}
// `slots` x `slot_bytes` in the test's layout.
Geometry G(uint32_t slots, uint32_t slot_bytes) { return MakeGeometry(TestLayout(), slots, slot_bytes); }

// ---- the format, without a network ------------------------------------------

TEST(RingFormat, EntryRoundTripsAndIsTiedToItsSeq) {
  Geometry g{4, 128};
  std::vector<uint8_t> slot(g.slot_bytes);
  const std::vector<uint8_t> payload = Pattern(37, 1);
  ASSERT_TRUE(EncodeEntry(slot, 9, 0, payload).ok());
  std::vector<uint8_t> got;
  uint32_t code = 1;
  EXPECT_EQ(CopyEntry(slot, 9, &got, &code), EntryState::kComplete);
  EXPECT_EQ(got, payload);
  EXPECT_EQ(code, 0u);
  // The same slot a lap earlier or later is not this entry.
  EXPECT_EQ(CopyEntry(slot, 9 - g.slots, &got, &code), EntryState::kAbsent);
  EXPECT_EQ(CopyEntry(slot, 9 + g.slots, &got, &code), EntryState::kAbsent);
  ClearEntry(slot);
  EXPECT_EQ(CopyEntry(slot, 9, &got, &code), EntryState::kAbsent);
}

TEST(RingFormat, TornEntriesAreNeverComplete) {
  Geometry g{4, 128};
  const std::vector<uint8_t> payload = Pattern(40, 2);
  std::vector<uint8_t> full(g.slot_bytes);
  ASSERT_TRUE(EncodeEntry(full, 3, 0, payload).ok());
  std::vector<uint8_t> got;
  uint32_t code = 0;
  // Every prefix of the entry (a put that stopped short) and the header
  // alone with an earlier lap's bytes behind it.
  const size_t used = kHeaderBytes + 40 + kTrailerBytes;
  for (size_t n = kHeaderBytes; n < used; ++n) {
    std::vector<uint8_t> slot(g.slot_bytes, 0);
    std::copy(full.begin(), full.begin() + n, slot.begin());
    EXPECT_EQ(CopyEntry(slot, 3, &got, &code), EntryState::kTorn) << "prefix " << n;
  }
  // Header and trailer right, one payload byte from elsewhere.
  std::vector<uint8_t> slot = full;
  slot[kHeaderBytes + 5] ^= 0x40;
  EXPECT_EQ(CopyEntry(slot, 3, &got, &code), EntryState::kTorn);
  // A length that cannot fit the slot.
  slot = full;
  const uint32_t huge = g.slot_bytes;
  std::memcpy(slot.data() + 8, &huge, 4);
  EXPECT_EQ(CopyEntry(slot, 3, &got, &code), EntryState::kMalformed);
  // A payload that does not fit is refused at encoding.
  EXPECT_FALSE(EncodeEntry(full, 3, 0, Pattern(g.max_payload() + 1, 3)).ok());
  EXPECT_TRUE(EncodeEntry(full, 3, 0, Pattern(g.max_payload(), 3)).ok());
}

// The check folds four lanes (word i into lane i % 4): a KV-sized entry
// (the ring's common case, payload longer than the lanes' 32-byte blocks
// and not a multiple of 8) whose payload is the next lap's only in part,
// or has one bit or one byte of another lane's word changed, or two words
// swapped, is never complete.
TEST(RingFormat, TornKvSizedPayloadIsNeverCompleteInAnyLane) {
  Geometry g{8, 512};
  const size_t n = 301;
  const std::vector<uint8_t> old_payload = Pattern(n, 4);
  const std::vector<uint8_t> new_payload = Pattern(n, 5);
  std::vector<uint8_t> old_slot(g.slot_bytes), new_slot(g.slot_bytes);
  ASSERT_TRUE(EncodeEntry(old_slot, 2, 0, old_payload).ok());
  ASSERT_TRUE(EncodeEntry(new_slot, 2 + g.slots, 0, new_payload).ok());
  std::vector<uint8_t> got;
  uint32_t code = 0;
  ASSERT_EQ(CopyEntry(new_slot, 2 + g.slots, &got, &code), EntryState::kComplete);
  EXPECT_EQ(got, new_payload);
  // The new lap's header and trailer over a payload written up to byte k.
  for (size_t k = 0; k < n; ++k) {
    std::vector<uint8_t> slot = new_slot;
    std::copy(old_slot.begin() + kHeaderBytes + k, old_slot.begin() + kHeaderBytes + n, slot.begin() + kHeaderBytes + k);
    if (old_payload[k] == new_payload[k]) continue;  // byte k agrees: not torn at k
    EXPECT_EQ(CopyEntry(slot, 2 + g.slots, &got, &code), EntryState::kTorn) << "written up to byte " << k;
  }
  // Every single bit of the payload flipped.
  for (size_t bit = 0; bit < n * 8; ++bit) {
    std::vector<uint8_t> slot = new_slot;
    slot[kHeaderBytes + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    ASSERT_EQ(CopyEntry(slot, 2 + g.slots, &got, &code), EntryState::kTorn) << "bit " << bit;
  }
  // Two different words swapped, within a lane (i, i + 4) and across lanes.
  for (size_t i = 0; i + 1 < n / 8; ++i) {
    for (size_t j : {i + 1, i + 4}) {
      if (j >= n / 8) continue;
      std::vector<uint8_t> slot = new_slot;
      std::swap_ranges(slot.begin() + kHeaderBytes + 8 * i, slot.begin() + kHeaderBytes + 8 * i + 8,
                       slot.begin() + kHeaderBytes + 8 * j);
      if (slot == new_slot) continue;
      EXPECT_EQ(CopyEntry(slot, 2 + g.slots, &got, &code), EntryState::kTorn) << "words " << i << ", " << j;
    }
  }
}

TEST(RingFormat, SetupMessagesRoundTripAndRejectTruncation) {
  OpenRequest req;
  req.geometry = {64, 256};
  req.response_base = 0x1234000;
  req.response_rkey = Pattern(50, 4);
  std::vector<uint8_t> bytes = EncodeOpenRequest(req);
  auto back = DecodeOpenRequest(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->geometry.slots, 64u);
  EXPECT_EQ(back->geometry.slot_bytes, 256u);
  EXPECT_EQ(back->response_base, req.response_base);
  EXPECT_EQ(back->response_rkey, req.response_rkey);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeOpenRequest(std::span<const uint8_t>(bytes.data(), n)).ok()) << n;
  }
  req.geometry.slot_bytes = 100;  // not a multiple of 8
  EXPECT_EQ(DecodeOpenRequest(EncodeOpenRequest(req)).status().code(), Status::Code::kInvalidArgument);

  OpenReply reply;
  reply.ring_id = 7;
  reply.ring_base = 1;
  reply.tail_address = 2;
  reply.ring_rkey = Pattern(30, 5);
  reply.tail_rkey = Pattern(31, 6);
  bytes = EncodeOpenReply(reply);
  auto r = DecodeOpenReply(bytes);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ring_id, 7u);
  EXPECT_EQ(r->tail_rkey, reply.tail_rkey);
  bytes.pop_back();
  EXPECT_FALSE(DecodeOpenReply(bytes).ok());
}

// ---- a host on its own thread -------------------------------------------------

// The node's loop as a memory node runs it: progress, scan, and sleep on
// the Worker only when the RingHost allows it.
class HostThread {
 public:
  using Handler = std::function<void(RingHost&, Worker&, const RingHost::Request&)>;
  // `idle_wait`: how long the node sleeps on its Worker at most when the
  // RingHost allows it (a test of lost wake-ups makes it longer than any
  // wait of its clients, so that a missed wake-up shows as a timeout).
  HostThread(RingHostOptions options, Handler handler, WorkerOptions worker_options = {},
             std::chrono::milliseconds idle_wait = 100ms)
      : idle_wait_(idle_wait),
        thread_([this, options, handler, worker_options] { Run(options, handler, worker_options); }) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, 20s, [this] { return ready_; });
  }
  ~HostThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      if (worker_ != nullptr) worker_->Wake();
    }
    thread_.join();
  }
  uint16_t port() const { return port_; }

  // Runs `fn` on the host's thread and waits for it (at most 10 s).
  bool Call(std::function<void(RingHost&, Worker&)> fn) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back([fn, done](RingHost& h, Worker& w) {
        fn(h, w);
        done->store(true);
      });
      if (worker_ != nullptr) worker_->Wake();
    }
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return done->load(); });
  }
  RingHostCounters counters() {
    RingHostCounters c;
    Call([&c](RingHost& h, Worker&) { c = h.counters(); });
    return c;
  }
  // The host's poll window in use now (0 if the host's thread did not answer).
  uint32_t window_us() {
    uint32_t w = 0;
    Call([&w](RingHost& h, Worker&) { w = h.window_us(); });
    return w;
  }
  // Waits (at most 10 s, asking the host's thread) until `pred` holds.
  bool WaitFor(std::function<bool(RingHost&)> pred) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      bool ok = false;
      if (!Call([&](RingHost& h, Worker&) { ok = pred(h); })) return false;
      if (ok) return true;
      std::this_thread::yield();
    }
    return false;
  }

 private:
  void Run(const RingHostOptions& options, const Handler& handler, const WorkerOptions& worker_options) {
    std::unique_ptr<Worker> worker = MakeWorker(worker_options);
    std::unique_ptr<RingHost> host;
    if (worker != nullptr) {
      auto p = worker->Listen("127.0.0.1", 0);
      EXPECT_TRUE(p.ok()) << p.status().ToString();
      if (p.ok()) port_ = *p;
      Worker* w = worker.get();
      RingHost** self = new RingHost*(nullptr);
      auto h = RingHost::Create(w, options, [handler, self, w](const RingHost::Request& r) { handler(**self, *w, r); });
      EXPECT_TRUE(h.ok()) << h.status().ToString();
      if (h.ok()) host = std::move(h).value();
      *self = host.get();
      owned_self_.reset(self);
      RingHost* hp = host.get();
      worker->SetDisconnectHandler([hp](EndpointId ep, const Status&) {
        if (hp != nullptr) hp->Close(ep);
      });
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      worker_ = worker.get();
      ready_ = true;
      cv_.notify_all();
    }
    while (worker != nullptr && host != nullptr) {
      std::vector<std::function<void(RingHost&, Worker&)>> calls;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) break;
        calls.swap(calls_);
      }
      for (auto& c : calls) c(*host, *worker);
      if (!calls.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        cv_.notify_all();
      }
      worker->Progress();
      host->Poll();
      if (host->MaySleep()) (void)worker->WaitForEvent(Clock::now() + idle_wait_);
    }
    std::lock_guard<std::mutex> lock(mu_);
    worker_ = nullptr;
    host.reset();
    worker.reset();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
  bool stop_ = false;
  std::vector<std::function<void(RingHost&, Worker&)>> calls_;
  Worker* worker_ = nullptr;
  uint16_t port_ = 0;
  std::unique_ptr<RingHost*> owned_self_;
  std::chrono::milliseconds idle_wait_;
  std::thread thread_;
};

// Answers every entry at once with its payload reversed.
void ReverseHandler(RingHost& host, Worker&, const RingHost::Request& r) {
  std::vector<uint8_t> out(r.payload.rbegin(), r.payload.rend());
  Status s = host.Respond(r.ring, r.seq, Status::Ok(), out);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

std::vector<uint8_t> Reversed(std::vector<uint8_t> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

struct Answer {
  Status status;
  std::vector<uint8_t> payload;
};

// A client Worker (busy polling: the node's one-sided answers raise no
// event) connected to the host, with a ring.
struct ClientSide {
  std::unique_ptr<Worker> w;
  EndpointId ep = kInvalidEndpoint;
  std::unique_ptr<RingClient> ring;
  std::map<uint64_t, Answer> answers;

  // `busy`: the Worker busy-polls; else it sleeps in its waits (the tests
  // of the wait word, where only a message may end a wait).
  ClientSide(uint16_t port, Geometry geometry, WorkerOptions options = {}, bool require_native_rma = false,
             bool busy = true) {
    options.poll_mode = busy ? PollMode::kBusy : PollMode::kSleep;
    w = MakeWorker(options);
    if (w == nullptr) return;
    auto r = w->Connect("127.0.0.1", port, 10s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return;
    ep = *r;
    RingClientOptions ro;
    ro.geometry = geometry;
    ro.require_native_rma = require_native_rma;  // default: every transport, the path is the same
    auto c = RingClient::Open(w.get(), ep, ro);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (c.ok()) ring = std::move(c).value();
  }
  ~ClientSide() {
    ring.reset();
    w.reset();
  }
  bool ok() const { return ring != nullptr; }

  size_t Take() {
    return ring->Poll([this](uint64_t seq, const Status& s, std::span<const uint8_t> p) {
      EXPECT_EQ(answers.count(seq), 0u) << "seq " << seq << " answered twice";
      answers[seq] = Answer{s, std::vector<uint8_t>(p.begin(), p.end())};
    });
  }
  // Posts `payload` and waits for its answer (at most 10 s).
  std::optional<Answer> RoundTrip(const std::vector<uint8_t>& payload) {
    auto seq = ring->Post(payload);
    EXPECT_TRUE(seq.ok()) << seq.status().ToString();
    if (!seq.ok() || !WaitAnswer(*seq)) return std::nullopt;
    return answers[*seq];
  }
  // Takes answers until `seq` has one (at most 10 s).  Polls: answers
  // written one-sidedly raise no event that a Worker wait would return for.
  bool WaitAnswer(uint64_t seq) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      w->Progress();
      Take();
      if (answers.count(seq) != 0) return true;
    }
    return false;
  }
};

// On one host UCX offers one-sided puts over shared memory only into memory
// it allocated itself; the rings are allocated so (Worker::AllocateMemory),
// and RmaPath::kAuto maps them: a client's writes land while the node's
// thread is held and progresses nothing, and answers come back one-sided.
TEST(RingPath, UcxAllocatedRingsAreWrittenWhileTheNodeIsHeld) {
  HostThread host({}, ReverseHandler);
  {
    std::unique_ptr<Worker> probe = MakeWorker({});
    ASSERT_NE(probe, nullptr);
    auto ep = probe->Connect("127.0.0.1", host.port(), 10s);
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    auto info = probe->DescribeEndpoint(*ep);
    ASSERT_TRUE(info.ok());
    if (info->find("posix") == std::string::npos && info->find("sysv") == std::string::npos) {
      GTEST_SKIP() << "no shared-memory transport between the two workers";
    }
  }
  ClientSide c(host.port(), G(8, 128), {}, /*require_native_rma=*/true);  // as RequestPath::kAuto asks
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c.ring->native_rma());
  ASSERT_TRUE(host.Call([](RingHost& h, Worker&) {
    ASSERT_EQ(h.ring_endpoints().size(), 1u);
    EXPECT_TRUE(h.AnswersOneSided(h.ring_endpoints().front()));
  }));
  // Hold the node's thread: a write it would have to serve (a pulse
  // message put) cannot complete until it is released.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> holding;
  std::thread holder([&] {
    host.Call([&](RingHost&, Worker&) {
      holding.set_value();
      (void)released.wait_for(20s);
    });
  });
  holding.get_future().wait();
  const uint32_t unchanged_tail = 0;  // nothing announced
  Status put = c.w->Put(c.ring->TestTailKey(), c.ring->TestTailAddress(), &unchanged_tail, 4, 5s);
  release.set_value();
  holder.join();
  EXPECT_TRUE(put.ok()) << put.ToString();
  // And the path works end to end.
  std::optional<Answer> answer = c.RoundTrip(Pattern(9, 3));
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->payload, Reversed(Pattern(9, 3)));
}

TEST(RingPath, WrapsAroundManyTimesAndAnswersEachEntryInItsSlot) {
  HostThread host({}, ReverseHandler);
  ClientSide c(host.port(), G(8, 128));
  ASSERT_TRUE(c.ok());
  std::printf("ring transport: %s\n", c.ring->native_rma() ? "UCX one-sided puts" : "pulse messages");
  std::mt19937 rng(11);
  // 100 entries through 8 slots (12 laps), 1 to 3 in flight at a time.
  uint64_t next_check = 0;
  std::map<uint64_t, std::vector<uint8_t>> sent;
  while (sent.size() < 100) {
    const int burst = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < burst && sent.size() < 100; ++i) {
      // At most a slot's payload in either layout (a double-layer data area
      // holds slots x slot_bytes: three of those fit).
      std::vector<uint8_t> p = Pattern(rng() % (c.ring->geometry().slot_bytes - kHeaderBytes - kTrailerBytes + 1), rng());
      auto seq = c.ring->Post(p);
      ASSERT_TRUE(seq.ok()) << seq.status().ToString();
      sent[*seq] = p;
    }
    ASSERT_TRUE(c.WaitAnswer(sent.rbegin()->first));
    for (; next_check <= sent.rbegin()->first; ++next_check) {
      ASSERT_EQ(c.answers.count(next_check), 1u);
      const Answer& a = c.answers[next_check];
      EXPECT_TRUE(a.status.ok()) << a.status.ToString();
      EXPECT_EQ(a.payload, Reversed(sent[next_check])) << "seq " << next_check;
    }
  }
  EXPECT_EQ(c.ring->in_flight(), 0u);
  RingHostCounters hc = host.counters();
  EXPECT_EQ(hc.entries, 100u);
  EXPECT_EQ(hc.responses, 100u);
  EXPECT_EQ(hc.malformed, 0u);
  EXPECT_GE(hc.doorbells, 1u);
}

TEST(RingPath, CreditsAtExactlyFullRefuseOneMoreAndNothingIsOverwritten) {
  // The host holds every answer back until told.
  auto held = std::make_shared<std::vector<RingHost::Request>>();
  auto payloads = std::make_shared<std::vector<std::vector<uint8_t>>>();
  HostThread host({}, [held, payloads](RingHost&, Worker&, const RingHost::Request& r) {
    held->push_back(r);
    payloads->emplace_back(r.payload.begin(), r.payload.end());
  });
  if (TestLayout() != Layout::kSlots) GTEST_SKIP() << "kSlots reuses slots in sequence; RingDoubleLayer.* tests the other";
  const Geometry g{8, 64};
  ClientSide c(host.port(), g);
  ASSERT_TRUE(c.ok());
  for (uint32_t i = 0; i < g.slots; ++i) {
    auto seq = c.ring->Post(Pattern(8, i));
    ASSERT_TRUE(seq.ok()) << i << ": " << seq.status().ToString();
  }
  EXPECT_FALSE(c.ring->has_credit());
  auto full = c.ring->Post(Pattern(8, 99));
  EXPECT_EQ(full.status().code(), Status::Code::kResourceExhausted);
  ASSERT_TRUE(host.WaitFor([held, g](RingHost&) { return held->size() == g.slots; }));
  // The host took exactly the slots' worth, each entry as posted.
  for (uint32_t i = 0; i < g.slots; ++i) {
    EXPECT_EQ((*held)[i].seq, i);
    EXPECT_EQ((*payloads)[i], Pattern(8, i));
  }
  EXPECT_EQ(c.Take(), 0u);
  // Answer the last one first: the slot of seq 0 stays busy, so the next
  // post (seq 8 -> slot 0) is still refused; after seq 0, it goes.
  ASSERT_TRUE(host.Call([held](RingHost& h, Worker&) {
    ASSERT_TRUE(h.Respond(held->back().ring, 7, Status::Ok(), Pattern(3, 7)).ok());
  }));
  ASSERT_TRUE(c.WaitAnswer(7));
  EXPECT_EQ(c.ring->Post(Pattern(8, 100)).status().code(), Status::Code::kResourceExhausted);
  ASSERT_TRUE(host.Call([held](RingHost& h, Worker&) {
    ASSERT_TRUE(h.Respond(held->front().ring, 0, Status::NotFound("key 0"), {}).ok());
    // Answering twice is refused.
    EXPECT_EQ(h.Respond(held->front().ring, 0, Status::Ok(), {}).code(), Status::Code::kFailedPrecondition);
  }));
  ASSERT_TRUE(c.WaitAnswer(0));
  EXPECT_EQ(c.answers[0].status.code(), Status::Code::kNotFound);
  EXPECT_EQ(c.answers[0].status.message(), "key 0");
  EXPECT_EQ(c.answers[7].payload, Pattern(3, 7));
  auto again = c.ring->Post(Pattern(8, 8));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, 8u);
  ASSERT_TRUE(host.WaitFor([held](RingHost&) { return held->size() == 9; }));
  EXPECT_EQ((*payloads)[8], Pattern(8, 8));
}

// Writes the first `n` of `entry`'s bytes (a valid entry for `seq`, or
// garbage) where the client's entry for `seq` goes at the node (kSlots: its
// slot; kDoubleLayer: the data-area space `where` that TestReserve took,
// then the whole descriptor naming it), then the tail that announces it.
void PutEntryBytes(ClientSide& c, uint64_t seq, const Descriptor& where, const std::vector<uint8_t>& entry, size_t n) {
  const bool double_layer = c.ring->geometry().layout == Layout::kDoubleLayer;
  if (n > 0) {
    const uint64_t at = double_layer ? c.ring->TestDataAddress(where.offset) : c.ring->TestSlotAddress(seq);
    ASSERT_TRUE(c.w->Put(c.ring->TestRingKey(), at, entry.data(), n, 10s).ok());
  }
  if (double_layer) {
    uint8_t descriptor[kDescriptorBytes];
    EncodeDescriptor(descriptor, seq, where);
    ASSERT_TRUE(c.w->Put(c.ring->TestRingKey(), c.ring->TestSlotAddress(seq), descriptor, kDescriptorBytes, 10s).ok());
  }
  const uint32_t tail = static_cast<uint32_t>(seq + 1);
  ASSERT_TRUE(c.w->Put(c.ring->TestTailKey(), c.ring->TestTailAddress(), &tail, 4, 10s).ok());
}

// A valid entry for `seq` carrying `payload`, as many bytes as a slot
// (kSlots) or as the space TestReserve took (kDoubleLayer).
std::vector<uint8_t> EntryFor(ClientSide& c, uint64_t seq, const Descriptor& where, const std::vector<uint8_t>& payload) {
  const bool double_layer = c.ring->geometry().layout == Layout::kDoubleLayer;
  std::vector<uint8_t> entry(double_layer ? where.bytes : c.ring->geometry().slot_bytes);
  EXPECT_TRUE(EncodeEntry(entry, seq, 0, payload).ok());
  return entry;
}

void WritePartialEntry(ClientSide& c, uint64_t seq, const Descriptor& where, const std::vector<uint8_t>& payload,
                       size_t n) {
  PutEntryBytes(c, seq, where, EntryFor(c, seq, where, payload), n);
}

TEST(RingPath, TornEntryIsNeverProcessedUntilComplete) {
  // The torn timeout (which answers a never-completed entry with an error,
  // tested below) must not end this test's wait: 1000 scans may take longer
  // than the default 100 ms on a loaded machine.
  RingHostOptions options;
  options.torn_timeout_us = 60'000'000;
  HostThread host(options, ReverseHandler);
  ClientSide c(host.port(), G(16, 128));
  ASSERT_TRUE(c.ok());
  const std::vector<uint8_t> payload = Pattern(60, 21);
  Descriptor where;
  const uint64_t seq = c.ring->TestReserve(&where);
  // Header and half the payload, then the tail: visible at the node when
  // Put returns.
  WritePartialEntry(c, seq, where, payload, kHeaderBytes + 30);
  const uint64_t scans = host.counters().scans;
  // Many scans after the tail is visible: the entry is never taken.
  ASSERT_TRUE(host.WaitFor([scans](RingHost& h) { return h.counters().scans > scans + 1000; }));
  RingHostCounters hc = host.counters();
  EXPECT_EQ(hc.entries, 0u);
  EXPECT_EQ(hc.malformed, 0u);
  // The rest arrives: taken once, as written.
  WritePartialEntry(c, seq, where, payload, kHeaderBytes + 64 + kTrailerBytes);
  ASSERT_TRUE(c.WaitAnswer(seq));
  EXPECT_EQ(c.answers[seq].payload, Reversed(payload));
  EXPECT_EQ(host.counters().entries, 1u);
}

TEST(RingPath, MalformedAndLongTornEntriesAreAnsweredWithAnErrorAndCounted) {
  RingHostOptions options;
  options.torn_timeout_us = 2000;
  HostThread host(options, ReverseHandler);
  ClientSide c(host.port(), G(16, 128));
  ASSERT_TRUE(c.ok());
  // An entry whose length cannot fit: answered at once.
  Descriptor bad_at;
  uint64_t bad = c.ring->TestReserve(&bad_at);
  std::vector<uint8_t> entry = EntryFor(c, bad, bad_at, Pattern(8, 1));
  const uint32_t huge = 1u << 30;
  std::memcpy(entry.data() + 8, &huge, 4);
  PutEntryBytes(c, bad, bad_at, entry, entry.size());
  ASSERT_TRUE(c.WaitAnswer(bad));
  EXPECT_EQ(c.answers[bad].status.code(), Status::Code::kInvalidArgument);
  // A header whose body never comes: answered once the torn timeout passed.
  Descriptor torn_at;
  uint64_t torn = c.ring->TestReserve(&torn_at);
  WritePartialEntry(c, torn, torn_at, Pattern(40, 2), kHeaderBytes + 8);
  ASSERT_TRUE(c.WaitAnswer(torn));
  EXPECT_EQ(c.answers[torn].status.code(), Status::Code::kInvalidArgument);
  // The ring goes on.
  std::optional<Answer> good = c.RoundTrip(Pattern(20, 3));
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(good->payload, Reversed(Pattern(20, 3)));
  RingHostCounters hc = host.counters();
  EXPECT_EQ(hc.malformed, 2u);
  EXPECT_EQ(hc.entries, 1u);
}

TEST(RingPath, ClientKilledMidWriteStallsNobodyAndItsRingIsReclaimed) {
  HostThread host({}, ReverseHandler);
  auto a = std::make_unique<ClientSide>(host.port(), G(16, 128));
  ClientSide b(host.port(), G(16, 128));
  ASSERT_TRUE(a->ok() && b.ok());
  ASSERT_TRUE(host.WaitFor([](RingHost& h) { return h.ring_count() == 2; }));
  // A dies half way through an entry, with its tail already moved.
  Descriptor where;
  const uint64_t seq = a->ring->TestReserve(&where);
  WritePartialEntry(*a, seq, where, Pattern(50, 5), kHeaderBytes + 10);
  a.reset();  // its Worker goes: the connection ends
  // B is served meanwhile and after.
  for (int i = 0; i < 20; ++i) {
    std::optional<Answer> served = b.RoundTrip(Pattern(10 + i, i));
    ASSERT_TRUE(served.has_value());
    EXPECT_EQ(served->payload, Reversed(Pattern(10 + i, i)));
  }
  ASSERT_TRUE(host.WaitFor([](RingHost& h) { return h.ring_count() == 1 && h.counters().rings_closed == 1; }));
  // A new client gets a ring (the freed one can be reused) and is served.
  ClientSide c(host.port(), G(16, 128));
  ASSERT_TRUE(c.ok());
  std::optional<Answer> fresh = c.RoundTrip(Pattern(5, 9));
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(fresh->payload, Reversed(Pattern(5, 9)));
  EXPECT_EQ(host.counters().entries, 21u);
}

TEST(RingPath, TwoTenantsReachOnlyTheirOwnRingsAndAreServedAsThemselves) {
  auto secret = NewRandomKey();
  ASSERT_TRUE(secret.ok());
  WorkerOptions node_options;
  node_options.credentials = Credentials{*secret, std::nullopt, {}};
  // The handler answers with the tenant the connection proved.
  HostThread host({}, [](RingHost& h, Worker& w, const RingHost::Request& r) {
    auto who = w.PeerOf(r.ep);
    ASSERT_TRUE(who.ok());
    std::vector<uint8_t> out(4);
    std::memcpy(out.data(), &who->tenant, 4);
    ASSERT_TRUE(h.Respond(r.ring, r.seq, Status::Ok(), out).ok());
  }, node_options);
  auto tenant = [&](uint32_t t) {
    WorkerOptions o;
    o.credentials = Credentials{{}, t, DeriveTenantKey(*secret, t)};
    // pulse's messages: the node itself checks every write against the key's region.
    o.rma_path = RmaPath::kMessages;
    return o;
  };
  ClientSide one(host.port(), G(8, 128), tenant(1));
  ClientSide two(host.port(), G(8, 128), tenant(2));
  ASSERT_TRUE(one.ok() && two.ok());
  for (ClientSide* c : {&one, &two}) ASSERT_TRUE(c->RoundTrip(Pattern(4, 1)).has_value());
  uint32_t t1 = 0, t2 = 0;
  std::memcpy(&t1, one.answers[0].payload.data(), 4);
  std::memcpy(&t2, two.answers[0].payload.data(), 4);
  EXPECT_EQ(t1, 1u);
  EXPECT_EQ(t2, 2u);
  // Tenant 1's keys do not reach tenant 2's ring or tail, nor a byte next
  // to its own.
  std::vector<uint8_t> junk(64, 0xee);
  EXPECT_FALSE(one.w->Put(one.ring->TestRingKey(), two.ring->TestSlotAddress(1), junk.data(), junk.size(), 10s).ok());
  EXPECT_FALSE(one.w->Put(one.ring->TestTailKey(), two.ring->TestTailAddress(), junk.data(), 4, 10s).ok());
  EXPECT_FALSE(one.w->Put(one.ring->TestTailKey(), one.ring->TestTailAddress() + kTailBytes, junk.data(), 4, 10s).ok());
  EXPECT_FALSE(one.w->Put(one.ring->TestRingKey(), one.ring->TestSlotAddress(0) + one.ring->geometry().ring_bytes(),
                          junk.data(), 8, 10s).ok());
  // Tenant 2 is still served as before.
  std::optional<Answer> again = two.RoundTrip(Pattern(4, 2));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->payload, two.answers[0].payload);
  EXPECT_EQ(host.counters().malformed, 0u);
}

// The doorbell is a hint: one that lands before its entry (or counts what
// was taken already) must not make the client report answers it cannot
// take, or a waiter would spin without progressing its Worker.
TEST(RingPath, DoorbellWithoutItsEntryIsNotReportedAsReadyTwice) {
  HostThread host({}, [](RingHost&, Worker&, const RingHost::Request&) {});  // never answers
  const Geometry g = G(8, 128);
  ClientSide c(host.port(), g);
  ASSERT_TRUE(c.ok());
  Descriptor where;
  const uint64_t seq = c.ring->TestReserve(&where);
  uint8_t* memory = c.ring->TestResponseMemory();
  // Play the node: the doorbell first.
  ResponseStatus status{1, 0};
  std::memcpy(memory, &status, sizeof(status));
  EXPECT_TRUE(c.ring->has_responses());
  EXPECT_EQ(c.Take(), 0u);
  EXPECT_FALSE(c.ring->has_responses()) << "looked under this doorbell already";
  // Then the entry: taken, and nothing is reported after it.
  if (g.layout == Layout::kDoubleLayer) {
    std::span<uint8_t> answer(memory + kStatusBytes + g.data_offset() + where.answer_offset, where.answer_bytes);
    ASSERT_TRUE(EncodeEntry(answer, seq, kCodeOk, Pattern(5, 1)).ok());
    EncodeDescriptor(std::span<uint8_t>(memory + kStatusBytes + g.slot_offset(0), kDescriptorBytes), 0,
                     Descriptor{static_cast<uint32_t>(seq), static_cast<uint32_t>(seq >> 32), 0, 0});
  } else {
    std::span<uint8_t> slot(memory + kStatusBytes + g.slot_offset(seq), g.slot_bytes);
    ASSERT_TRUE(EncodeEntry(slot, seq, kCodeOk, Pattern(5, 1)).ok());
  }
  EXPECT_EQ(c.Take(), 1u);
  EXPECT_EQ(c.answers[seq].payload, Pattern(5, 1));
  EXPECT_FALSE(c.ring->has_responses());
  EXPECT_EQ(c.ring->in_flight(), 0u);
}

TEST(RingPath, IdleNodeSleepsAndOneWakeUpBringsItBack) {
  RingHostOptions options;
  options.poll_window_us = 500;
  HostThread host(options, ReverseHandler);
  ClientSide c(host.port(), G(8, 128));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.RoundTrip(Pattern(9, 1)).has_value());
  // No entries: the node publishes a sleep epoch and sleeps.
  ASSERT_TRUE(host.WaitFor([](RingHost& h) { return h.counters().sleeps >= 1 && h.MaySleep(); }));
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(host.WaitFor([](RingHost& h) { return h.MaySleep(); }));
    std::optional<Answer> next = c.RoundTrip(Pattern(9, 2 + round));
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(next->payload, Reversed(Pattern(9, 2 + round)));
  }
  // A wake-up was needed, and at most one per sleep.
  RingHostCounters hc = host.counters();
  EXPECT_GE(c.ring->counters().wakes_sent, 1u);
  EXPECT_LE(c.ring->counters().wakes_sent, hc.sleeps);
  EXPECT_LE(hc.wakes, c.ring->counters().wakes_sent);
}

// The node's poll window adapts (issue 15).  A sleep ended after a gap longer
// than the largest window means the window's polling was wasted: it halves,
// down to min_poll_window_us and never below.  Each gap here is made longer
// than that window by the test (it waits past it after the node slept).
TEST(RingPath, AWakeUpAfterAGapBeyondTheLargestWindowHalvesIt) {
  RingHostOptions options;
  options.poll_window_us = 2000;
  options.min_poll_window_us = 250;
  HostThread host(options, ReverseHandler);
  ClientSide c(host.port(), G(8, 128));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.RoundTrip(Pattern(9, 1)).has_value());
  uint32_t window = host.window_us();
  uint64_t ended = host.counters().sleeps_ended;
  for (int round = 0; round < 4; ++round) {
    ASSERT_TRUE(host.WaitFor([](RingHost& h) { return h.MaySleep(); }));
    std::this_thread::sleep_for(3ms);  // the gap: > poll_window_us
    ASSERT_TRUE(c.RoundTrip(Pattern(9, 2 + round)).has_value());
    const uint32_t now_window = host.window_us();
    const uint64_t now_ended = host.counters().sleeps_ended;
    // The sleep ends once, by the wake-up or by the entry a scan found
    // first (an emulated put's arrival wakes the node's Worker too).
    ASSERT_EQ(now_ended, ended + 1) << "round " << round << ": one end per sleep";
    EXPECT_EQ(now_window, std::max<uint32_t>(250, window / 2)) << "round " << round;
    window = now_window;
    ended = now_ended;
  }
  EXPECT_EQ(window, 250u) << "four halvings from at most 2000";
}

// A sleep ended after a gap the largest window would have bridged raises the
// window to twice that gap, so the next such gap is polled through instead
// of slept (a latency-bound client's gaps just over the window woke the node
// on most of its entries when every wake-up halved it).  The window is first
// driven to its minimum by long gaps; then the node sleeps after that
// minimum and is woken at once: the gap is at least the minimum and far
// below the largest window.
TEST(RingPath, AWakeUpAfterAGapTheLargestWindowBridgesRaisesIt) {
  RingHostOptions options;
  options.poll_window_us = 200'000;
  options.min_poll_window_us = 20'000;
  HostThread host(options, ReverseHandler);
  ClientSide c(host.port(), G(8, 128));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.RoundTrip(Pattern(9, 1)).has_value());
  for (int round = 0; round < 8 && host.window_us() > options.min_poll_window_us; ++round) {
    ASSERT_TRUE(host.WaitFor([](RingHost& h) { return h.MaySleep(); }));
    std::this_thread::sleep_for(210ms);
    ASSERT_TRUE(c.RoundTrip(Pattern(9, 2 + round)).has_value());
  }
  ASSERT_EQ(host.window_us(), options.min_poll_window_us);
  // A stall of this thread past the largest window between the node's
  // falling asleep and the round trip (a loaded CI machine) makes a gap no
  // window bridges, which leaves the window at its minimum instead: the
  // sleep and its end are tried up to three times, and one must raise it.
  uint32_t raised = 0;
  for (int attempt = 0; attempt < 3 && raised < 2 * options.min_poll_window_us; ++attempt) {
    const uint64_t ended = host.counters().sleeps_ended;
    ASSERT_TRUE(host.WaitFor([](RingHost& h) { return h.MaySleep(); }));
    ASSERT_TRUE(c.RoundTrip(Pattern(9, 20 + attempt)).has_value());
    // Ended by the wake-up or by the entry itself (whichever the node saw
    // first): either way the gap adapts the window.
    ASSERT_EQ(host.counters().sleeps_ended, ended + 1);
    raised = host.window_us();
  }
  EXPECT_GE(raised, 2 * options.min_poll_window_us);
  EXPECT_LE(raised, options.poll_window_us);
}

// ---- the client's wait word (kTailBytes, kAmRingAnswered) --------------------

// Workers that sleep until an event or the wait's own deadline: a Worker
// otherwise wakes every 100 ms (max_sleep_us), which would hide a lost
// wake-up behind a late but successful wait.
WorkerOptions SleepsUntilWoken() {
  WorkerOptions o;
  o.max_sleep_us = 60'000'000;
  return o;
}

// A host whose handler holds every request until the test answers it
// (Respond, then Poll to ring the doorbell), so the order of the client's
// wait and the node's doorbell is the test's.
struct HeldRequests {
  std::mutex mu;
  std::vector<RingHost::Request> held;  // payloads not kept
  HostThread::Handler Handler() {
    return [this](RingHost&, Worker&, const RingHost::Request& r) {
      std::lock_guard<std::mutex> lock(mu);
      held.push_back(RingHost::Request{r.ring, r.ep, r.seq, {}});
    };
  }
  // On the host's thread: answers every held request and rings the doorbells.
  void AnswerAll(RingHost& h) {
    std::lock_guard<std::mutex> lock(mu);
    for (const RingHost::Request& r : held) EXPECT_TRUE(h.Respond(r.ring, r.seq, Status::Ok(), Pattern(5, 1)).ok());
    held.clear();
    h.Poll();
  }
};

// The client publishes its wait, then the node answers: the node's doorbell
// comes with one message, which ends the client's blocking wait at once
// (the wait's deadline is 10 s: a timeout is the lost wake-up).
TEST(RingWait, AClientBlockedAfterPublishingItsWaitIsWokenByTheAnswer) {
  HeldRequests requests;
  HostThread host({}, requests.Handler());
  ClientSide c(host.port(), G(8, 128), SleepsUntilWoken(), /*require_native_rma=*/true, /*busy=*/false);
  ASSERT_TRUE(c.ok()) << "no one-sided ring on this host";
  for (uint64_t round = 0; round < 3; ++round) {
    ASSERT_TRUE(c.ring->Post(Pattern(9, round)).ok());
    c.Take();  // wakes the node if it sleeps
    ASSERT_TRUE(host.WaitFor([&](RingHost& h) { return h.counters().entries == round + 1; }));
    ASSERT_TRUE(c.ring->PrepareToWait());
    ASSERT_FALSE(c.ring->has_responses());
    ASSERT_TRUE(host.Call([&](RingHost& h, Worker&) { requests.AnswerAll(h); }));
    Status woke = c.w->WaitForEvent(Clock::now() + 10s);
    ASSERT_TRUE(woke.ok()) << "round " << round << ": " << woke.ToString();
    ASSERT_TRUE(c.ring->has_responses());
    c.ring->DoneWaiting();
    EXPECT_EQ(c.Take(), 1u);
    EXPECT_EQ(host.counters().answered_wakes, round + 1);
  }
  EXPECT_EQ(c.ring->counters().waits, 3u);
}

// The node answers first, with no wait published (no message); a wait
// published after that sees the doorbell and must not block.  A doorbell
// on another client's ring sends this one nothing.
TEST(RingWait, AnAnswerBeforeTheWaitIsSeenWithoutAMessage) {
  HeldRequests requests;
  HostThread host({}, requests.Handler());
  ClientSide c(host.port(), G(8, 128), SleepsUntilWoken(), true, false);
  ClientSide other(host.port(), G(8, 128), SleepsUntilWoken(), true, false);
  ASSERT_TRUE(c.ok() && other.ok());
  ASSERT_TRUE(c.ring->Post(Pattern(9, 1)).ok());
  c.Take();
  ASSERT_TRUE(host.WaitFor([](RingHost& h) { return h.counters().entries == 1; }));
  ASSERT_TRUE(c.ring->PrepareToWait());  // waits ...
  ASSERT_TRUE(other.ring->Post(Pattern(9, 2)).ok());
  other.Take();
  ASSERT_TRUE(host.WaitFor([](RingHost& h) { return h.counters().entries == 2; }));
  // ... but only `other` is answered, which had published no wait.
  ASSERT_TRUE(host.Call([&](RingHost& h, Worker&) {
    std::lock_guard<std::mutex> lock(requests.mu);
    ASSERT_EQ(requests.held.size(), 2u);
    const RingHost::Request second = requests.held[1];  // other's entry (taken second)
    EXPECT_TRUE(h.Respond(second.ring, second.seq, Status::Ok(), Pattern(5, 2)).ok());
    requests.held.pop_back();
    h.Poll();
  }));
  EXPECT_EQ(host.counters().answered_wakes, 0u);
  ASSERT_TRUE(other.ring->PrepareToWait());
  EXPECT_TRUE(other.ring->has_responses());  // no need to block
  other.ring->DoneWaiting();
  EXPECT_EQ(other.Take(), 1u);
  // Now c's entry: its wait was published before, so this doorbell sends one.
  ASSERT_TRUE(host.Call([&](RingHost& h, Worker&) { requests.AnswerAll(h); }));
  EXPECT_TRUE(c.w->WaitForEvent(Clock::now() + 10s).ok());
  EXPECT_EQ(c.Take(), 1u);
  EXPECT_EQ(host.counters().answered_wakes, 1u);
}

// Both halves of the protocol under races: a node whose poll window is
// 1 us (it sleeps between nearly every batch, and its own idle wait is
// longer than any client wait) and clients on their own threads that block
// in their Workers whenever no answer is there.  Every request is answered
// and no wait on either side ends by its timeout: a wake-up lost in
// either direction would leave a client waiting its full 10 s.
TEST(RingWait, ManyBlockingClientsAndASleepyNodeLoseNoWakeUp) {
  RingHostOptions options;
  options.poll_window_us = 1;
  options.min_poll_window_us = 1;
  HostThread host(options, ReverseHandler, SleepsUntilWoken(), /*idle_wait=*/60s);
  constexpr int kClients = 6;
  constexpr int kRounds = 150;
  std::vector<std::thread> clients;
  std::atomic<int> timeouts{0}, answered{0}, failures{0};
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      ClientSide c(host.port(), G(8, 128), SleepsUntilWoken(), true, false);
      if (!c.ok()) {
        ++failures;
        return;
      }
      std::mt19937 rng(i);
      for (int round = 0; round < kRounds; ++round) {
        const int batch = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < batch; ++k) {
          if (!c.ring->Post(Pattern(24, round * 8 + k)).ok()) ++failures;
        }
        while (c.ring->in_flight() > 0) {
          c.w->Progress();
          c.Take();  // also sends the wake-up to a sleeping node
          if (c.ring->in_flight() == 0) break;
          if (!c.ring->PrepareToWait()) {
            ++failures;
            return;
          }
          if (c.ring->has_responses()) continue;
          if (c.w->WaitForEvent(Clock::now() + 10s).code() == Status::Code::kTimeout) ++timeouts;
          c.ring->DoneWaiting();
        }
      }
      answered += static_cast<int>(c.answers.size());
      for (const auto& [seq, a] : c.answers) {
        if (!a.status.ok()) ++failures;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(timeouts.load(), 0) << "a wait ended by its timeout: a wake-up was lost";
  RingHostCounters hc = host.counters();
  EXPECT_EQ(static_cast<uint64_t>(answered.load()), hc.responses);
  EXPECT_GE(hc.sleeps, 1u);
}

// ---- the client's idle rule (RingPollSchedule, RingSender) -----------------

TEST(RingPollSchedule, PollsThroughTheWindowThenBacksOffToTheLongestInterval) {
  using Clock = std::chrono::steady_clock;
  RingPollSchedule s;
  const Clock::time_point t0 = Clock::time_point{} + 1h;
  s.OnProgress(t0);
  EXPECT_TRUE(s.Due(t0));
  // Inside the window every poll is followed by another at once.
  s.OnIdlePoll(t0 + 50us);
  EXPECT_EQ(s.next_poll(), t0 + 50us);
  // Past it the intervals double and stop growing at the longest one.
  Clock::time_point now = t0 + RingPollSchedule::kWindow;
  std::chrono::microseconds expected = RingPollSchedule::kFirstInterval;
  for (int i = 0; i < 12; ++i) {
    s.OnIdlePoll(now);
    ASSERT_EQ(s.next_poll() - now, expected) << "poll " << i;
    EXPECT_FALSE(s.Due(now));
    now = s.next_poll();
    expected = std::min(expected * 2, RingPollSchedule::kMaxInterval);
  }
  // Progress (an answer, a post) brings the client back to polling.
  s.OnProgress(now);
  EXPECT_TRUE(s.Due(now));
  s.OnIdlePoll(now + RingPollSchedule::kWindow);
  EXPECT_EQ(s.next_poll() - (now + RingPollSchedule::kWindow), RingPollSchedule::kFirstInterval);
}

// A client with an entry in flight at a node that never answers: its wait
// blocks between bounded polls instead of spinning.  The bound is a count
// of polls over the wait (the window's few, then one per interval); a
// loaded machine only polls less.
TEST(RingPath, ClientWaitingOnAStalledNodeDoesNotSpin) {
  HostThread host({}, [](RingHost&, Worker&, const RingHost::Request&) {});  // never answers
  ClientOptions options;
  ClientCounters counters;
  Connections connections(options, counters);
  WorkerOptions wo;
  connections.worker = MakeWorker(wo);
  ASSERT_NE(connections.worker, nullptr);
  auto ep = connections.worker->Connect("127.0.0.1", host.port(), 10s);
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  MemNode node;
  node.id = 0;
  node.base = 1ull << 32;
  node.size = 1ull << 20;
  node.ep = *ep;
  connections.nodes.push_back(node);
  uint64_t delivered = 0;
  RingSender sender(&connections, &counters, [&delivered](std::span<const uint8_t>) { ++delivered; });
  sender.Open(RequestPath::kRing,
              TestLayout() == Layout::kDoubleLayer ? RingLayout::kDoubleLayer : RingLayout::kSlots, 8, 512);
  ASSERT_EQ(sender.rings(), 1u) << sender.PathOf(0);
  EventLoop loop(connections.worker.get());
  loop.Add(&sender);
  TraversalMessage m;
  m.request_id = 1;
  m.cur_ptr = node.base + 64;
  ASSERT_TRUE(sender.TrySend(m));
  const auto stall = 1000ms;
  Status s = loop.DriveUntil([] { return false; }, stall);
  EXPECT_EQ(s.code(), Status::Code::kTimeout);
  EXPECT_EQ(delivered, 0u);
  // At most: the window's polls (a few waits of >= 100 us), then one per
  // interval, the intervals doubling to kMaxInterval; twice that for slack.
  const uint64_t bound = 2 * (8 + stall / RingPollSchedule::kMaxInterval + 16);
  EXPECT_GE(sender.ring_polls(), 1u);
  EXPECT_LE(sender.ring_polls(), bound) << "the client polled its ring like a spinning loop";
  loop.Remove(&sender);
}

// ---- the double-layer layout (seed 004 Rcmp 5.2) ----------------------------

TEST(RingFormat, DescriptorsRoundTripAndTornOnesAreNeverComplete) {
  uint8_t slot[kDescriptorBytes] = {};
  const Descriptor d{64, 200, 4096, 512};
  EncodeDescriptor(slot, 41, d);
  Descriptor back;
  ASSERT_EQ(CopyDescriptor(slot, 41, &back), EntryState::kComplete);
  EXPECT_EQ(back.offset, 64u);
  EXPECT_EQ(back.bytes, 200u);
  EXPECT_EQ(back.answer_offset, 4096u);
  EXPECT_EQ(back.answer_bytes, 512u);
  EXPECT_EQ(CopyDescriptor(slot, 42, &back), EntryState::kAbsent) << "another number's";
  // Every field torn (a byte of the next lap's descriptor under this tag).
  for (size_t i = 8; i < kDescriptorBytes; ++i) {
    uint8_t torn[kDescriptorBytes];
    std::memcpy(torn, slot, sizeof(torn));
    torn[i] ^= 0x5a;
    EXPECT_EQ(CopyDescriptor(torn, 41, &back), EntryState::kTorn) << "byte " << i;
  }
  ClearDescriptor(slot);
  EXPECT_EQ(CopyDescriptor(slot, 41, &back), EntryState::kAbsent);
}

TEST(RingFormat, DoubleLayerGeometryAndItsOpenRequestAreChecked) {
  Geometry g = MakeGeometry(Layout::kDoubleLayer, 16, 128);
  EXPECT_EQ(g.data_bytes, 16u * 128);
  EXPECT_EQ(g.ring_bytes(), 16u * kDescriptorBytes + 16 * 128);
  EXPECT_EQ(g.max_payload(), 16u * 128 - kHeaderBytes - kTrailerBytes);
  EXPECT_TRUE(g.Validate().ok());
  OpenRequest req;
  req.geometry = g;
  req.response_base = 77;
  req.response_rkey = Pattern(12, 1);
  auto back = DecodeOpenRequest(EncodeOpenRequest(req));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->geometry.layout, Layout::kDoubleLayer);
  EXPECT_EQ(back->geometry.data_bytes, g.data_bytes);
  // A version 1 request (no layout) still opens a slots ring.
  req.version = 1;
  req.geometry = Geometry{16, 128};
  back = DecodeOpenRequest(EncodeOpenRequest(req));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->geometry.layout, Layout::kSlots);
  // Refused by name: an unknown layout, a data area that is no multiple of
  // the unit or smaller than the answer space, data_bytes with slots.
  auto refused = [](Geometry bad, const char* field) {
    OpenRequest r;
    r.geometry = bad;
    r.response_rkey = Pattern(4, 2);
    auto d = DecodeOpenRequest(EncodeOpenRequest(r));
    ASSERT_FALSE(d.ok()) << field;
    EXPECT_EQ(d.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(d.status().message().find(field), std::string::npos) << d.status().message();
  };
  Geometry bad = g;
  bad.layout = static_cast<Layout>(7);
  refused(bad, "layout");
  bad = g;
  bad.data_bytes = 1000;
  refused(bad, "data_bytes");
  bad = g;
  bad.data_bytes = 64;
  refused(bad, "data_bytes");
  bad = Geometry{16, 128};
  bad.data_bytes = 4096;
  refused(bad, "data_bytes");
  EXPECT_FALSE(ParseLayout("triple").ok());
  EXPECT_EQ(*ParseLayout("double"), Layout::kDoubleLayer);
}

// A host that keeps every entry until the test answers it.
struct HeldEntries {
  std::mutex mu;
  std::vector<RingHost::Request> requests;
  std::vector<std::vector<uint8_t>> payloads;
};

TEST(RingDoubleLayer, ASlowAnswerHoldsBackNoOtherEntrysCredit) {
  auto held = std::make_shared<HeldEntries>();
  HostThread host({}, [held](RingHost&, Worker&, const RingHost::Request& r) {
    held->requests.push_back(r);
    held->payloads.emplace_back(r.payload.begin(), r.payload.end());
  });
  const Geometry g = MakeGeometry(Layout::kDoubleLayer, 8, 64);
  ClientSide c(host.port(), g);
  ASSERT_TRUE(c.ok());
  for (uint32_t i = 0; i < g.slots; ++i) ASSERT_TRUE(c.ring->Post(Pattern(8, i)).ok()) << i;
  EXPECT_FALSE(c.ring->has_credit());
  EXPECT_EQ(c.ring->Post(Pattern(8, 99)).status().code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(c.ring->counters().refused_full, 1u);
  ASSERT_TRUE(host.WaitFor([held, g](RingHost&) { return held->requests.size() == g.slots; }));
  // Seq 0 stays unanswered throughout.  Every other answer frees a credit:
  // 50 more entries pass while it waits (kSlots would refuse the 9th, whose
  // slot is seq 0's).
  uint64_t answered_up_to = 0;
  for (uint64_t next = g.slots; next < g.slots + 50; ++next) {
    const uint64_t answer = next - g.slots + 1;  // 1, 2, ...: all but seq 0
    ASSERT_TRUE(host.Call([held, answer](RingHost& h, Worker&) {
      ASSERT_TRUE(h.Respond(held->requests.front().ring, answer, Status::Ok(), Pattern(4, answer)).ok());
    }));
    ASSERT_TRUE(c.WaitAnswer(answer));
    EXPECT_EQ(c.answers[answer].payload, Pattern(4, answer));
    auto seq = c.ring->Post(Pattern(8, next));
    ASSERT_TRUE(seq.ok()) << next << ": " << seq.status().ToString();
    EXPECT_EQ(*seq, next);
    answered_up_to = answer;
  }
  ASSERT_TRUE(host.WaitFor([held, g](RingHost&) { return held->requests.size() == g.slots + 50; }));
  for (uint64_t i = 0; i < held->requests.size(); ++i) {
    EXPECT_EQ(held->requests[i].seq, i);
    EXPECT_EQ(held->payloads[i], Pattern(8, i)) << "entry " << i << " overwritten";
  }
  EXPECT_EQ(c.answers.count(0), 0u);
  // Seq 0 answered last: its answer finds its place, nothing else changed.
  ASSERT_TRUE(host.Call([held](RingHost& h, Worker&) {
    ASSERT_TRUE(h.Respond(held->requests.front().ring, 0, Status::NotFound("key 0"), {}).ok());
    EXPECT_EQ(h.Respond(held->requests.front().ring, 0, Status::Ok(), {}).code(), Status::Code::kFailedPrecondition);
  }));
  ASSERT_TRUE(c.WaitAnswer(0));
  EXPECT_EQ(c.answers[0].status.code(), Status::Code::kNotFound);
  EXPECT_EQ(c.answers[0].status.message(), "key 0");
  EXPECT_EQ(c.ring->in_flight(), g.slots + 50 - answered_up_to - 1);
}

TEST(RingDoubleLayer, AnEntryStillBeingWrittenHoldsBackNoEntryBehindIt) {
  RingHostOptions options;
  options.torn_timeout_us = 60'000'000;
  HostThread host(options, ReverseHandler);
  ClientSide c(host.port(), MakeGeometry(Layout::kDoubleLayer, 16, 128));
  ASSERT_TRUE(c.ok());
  // Entry 0: descriptor and tail there, its bytes half written.
  const std::vector<uint8_t> slow = Pattern(60, 1);
  Descriptor where;
  const uint64_t first = c.ring->TestReserve(&where);
  WritePartialEntry(c, first, where, slow, kHeaderBytes + 20);
  // Entries 1..5 behind it are served.
  for (int i = 0; i < 5; ++i) {
    std::optional<Answer> a = c.RoundTrip(Pattern(30 + i, 10 + i));
    ASSERT_TRUE(a.has_value()) << i;
    EXPECT_EQ(a->payload, Reversed(Pattern(30 + i, 10 + i)));
  }
  EXPECT_EQ(c.answers.count(first), 0u);
  EXPECT_EQ(host.counters().entries, 5u);
  // Its bytes complete: served once, as written.
  WritePartialEntry(c, first, where, slow, EntryBytes(slow.size()));
  ASSERT_TRUE(c.WaitAnswer(first));
  EXPECT_EQ(c.answers[first].payload, Reversed(slow));
  RingHostCounters hc = host.counters();
  EXPECT_EQ(hc.entries, 6u);
  EXPECT_EQ(hc.malformed, 0u);
}

TEST(RingDoubleLayer, EntriesOfAnyLengthUpToTheDataAreaAndSpaceComesBackInAnyOrder) {
  // Answers held and given in a random order; entries of random lengths,
  // many longer than the answer space (slot_bytes) and far longer than a
  // slot of the slots layout would be.  A reference map says what each
  // answer must be.
  auto held = std::make_shared<HeldEntries>();
  HostThread host({}, [held](RingHost&, Worker&, const RingHost::Request& r) {
    std::lock_guard<std::mutex> lock(held->mu);
    held->requests.push_back(r);
    held->payloads.emplace_back(r.payload.begin(), r.payload.end());
  });
  Geometry g = MakeGeometry(Layout::kDoubleLayer, 32, 128);
  g.data_bytes = 16384;
  ClientSide c(host.port(), g);
  ASSERT_TRUE(c.ok());
  std::mt19937 rng(5);
  std::map<uint64_t, std::vector<uint8_t>> sent;
  uint64_t refused_space = 0;
  size_t answered = 0;
  while (answered < 400) {
    // Post until refused (credit or space), then answer a random half.
    while (sent.size() < 400) {
      std::vector<uint8_t> p = Pattern(1 + rng() % 3000, rng());
      auto seq = c.ring->Post(p);
      if (!seq.ok()) {
        ASSERT_EQ(seq.status().code(), Status::Code::kResourceExhausted) << seq.status().ToString();
        break;
      }
      sent[*seq] = p;
    }
    refused_space = c.ring->counters().refused_space;
    std::vector<uint64_t> due;
    ASSERT_TRUE(host.WaitFor([&](RingHost&) {
      std::lock_guard<std::mutex> lock(held->mu);
      return held->requests.size() == sent.size();
    }));
    ASSERT_TRUE(host.Call([&](RingHost& h, Worker&) {
      std::lock_guard<std::mutex> lock(held->mu);
      std::vector<size_t> open;
      for (size_t i = 0; i < held->requests.size(); ++i) {
        if (!held->payloads[i].empty()) open.push_back(i);
      }
      std::shuffle(open.begin(), open.end(), rng);
      open.resize((open.size() + 1) / 2);
      for (size_t i : open) {
        // The answer: the entry's first bytes reversed, as long as the
        // reservation allows (max(entry, slot_bytes)).
        std::vector<uint8_t> out(held->payloads[i].rbegin(), held->payloads[i].rend());
        out.resize(std::min<size_t>(out.size(), 96));
        ASSERT_TRUE(h.Respond(held->requests[i].ring, held->requests[i].seq, Status::Ok(), out).ok());
        held->payloads[i].clear();
        due.push_back(held->requests[i].seq);
      }
    }));
    for (uint64_t seq : due) {
      ASSERT_TRUE(c.WaitAnswer(seq)) << seq;
      std::vector<uint8_t> expect(sent[seq].rbegin(), sent[seq].rend());
      expect.resize(std::min<size_t>(expect.size(), 96));
      EXPECT_EQ(c.answers[seq].payload, expect) << "seq " << seq;
      ++answered;
    }
    if (sent.size() == 400 && answered < 400 && due.empty()) break;
  }
  EXPECT_EQ(answered, 400u);
  EXPECT_GT(refused_space, 0u) << "the data area never filled: the test did not exercise its space";
  EXPECT_EQ(c.ring->in_flight(), 0u);
  // An answer longer than its entry's reservation is refused (the caller
  // sends it another way); the entry still takes its answer after.
  auto seq = c.ring->Post(Pattern(10, 1));
  ASSERT_TRUE(seq.ok());
  ASSERT_TRUE(host.WaitFor([&](RingHost&) {
    std::lock_guard<std::mutex> lock(held->mu);
    return held->requests.size() == 401;
  }));
  ASSERT_TRUE(host.Call([&](RingHost& h, Worker&) {
    EXPECT_EQ(h.Respond(held->requests.back().ring, *seq, Status::Ok(), Pattern(4000, 2)).code(),
              Status::Code::kInvalidArgument);
    EXPECT_TRUE(h.Respond(held->requests.back().ring, *seq, Status::Ok(), {}).ok());
  }));
  ASSERT_TRUE(c.WaitAnswer(*seq));
  EXPECT_TRUE(c.answers[*seq].payload.empty());
}

TEST(RingDoubleLayer, ADescriptorNamingBytesOutsideTheDataAreaIsAnsweredWithAnError) {
  HostThread host({}, ReverseHandler);
  ClientSide c(host.port(), MakeGeometry(Layout::kDoubleLayer, 16, 128));
  ASSERT_TRUE(c.ok());
  Descriptor where;
  const uint64_t bad = c.ring->TestReserve(&where);
  Descriptor outside = where;
  outside.offset = c.ring->geometry().data_bytes - 32;  // its bytes run past the area's end
  PutEntryBytes(c, bad, outside, {}, 0);
  ASSERT_TRUE(c.WaitAnswer(bad));
  EXPECT_EQ(c.answers[bad].status.code(), Status::Code::kInvalidArgument);
  std::optional<Answer> good = c.RoundTrip(Pattern(20, 3));
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(good->payload, Reversed(Pattern(20, 3)));
  EXPECT_EQ(host.counters().malformed, 1u);
}

}  // namespace
}  // namespace pulse::net::ring
