// FaultInjection, the transport-boundary test hook: spec parsing, and loss,
// duplication and reordering of a Worker's outgoing messages, checked
// against what an echo peer sends back.
#include <cstdlib>
#include <cstring>
#include <set>

#include "net/test_util.h"

namespace pulse::net::testing {
namespace {

uint32_t SeqOf(const std::vector<uint8_t>& m) {
  uint32_t seq = 0;
  std::memcpy(&seq, m.data(), 4);
  return seq;
}

TEST(NetFaultSpec, ParsesAndPrintsEveryKey) {
  auto f = FaultInjection::Parse("loss=0.05,dup=0.02,reorder=0.25,hold_us=300,seed=7,ids=1+3,rma=1");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->loss, 0.05);
  EXPECT_EQ(f->duplicate, 0.02);
  EXPECT_EQ(f->reorder, 0.25);
  EXPECT_EQ(f->hold_us, 300u);
  EXPECT_EQ(f->seed, 7u);
  EXPECT_EQ(f->message_ids, (std::vector<uint16_t>{1, 3}));
  EXPECT_TRUE(f->one_sided);
  EXPECT_TRUE(f->enabled());
  auto again = FaultInjection::Parse(f->ToString());
  ASSERT_TRUE(again.ok()) << f->ToString();
  EXPECT_EQ(again->ToString(), f->ToString());
  EXPECT_FALSE(FaultInjection::Parse("").value().enabled());
}

TEST(NetFaultSpec, RejectsBadInputNamingTheKey) {
  for (const char* bad : {"loss=2", "loss=-0.1", "dup=x", "reorder", "drop=0.1", "ids=70000", "seed=-1", "hold_us=1e3", "rma=2"}) {
    auto f = FaultInjection::Parse(bad);
    EXPECT_FALSE(f.ok()) << bad;
    EXPECT_EQ(f.status().code(), Status::Code::kInvalidArgument) << bad;
  }
  EXPECT_NE(FaultInjection::Parse("drop=0.1").status().message().find("unknown key 'drop'"), std::string::npos);
}

// Every message numbered; the peer echoes what it gets.  What comes back is
// exactly what the counters say was injected.
TEST(NetFaults, LossDuplicationAndReorderingMatchTheCounters) {
  PeerThread server({}, InstallEcho);
  ASSERT_TRUE(server.ok());
  WorkerOptions o;
  o.faults = FaultInjection{.loss = 0.1, .duplicate = 0.1, .reorder = 0.2, .hold_us = 1000, .seed = 7};
  EchoClient c(server.port(), o);
  ASSERT_TRUE(c.ok());
  constexpr uint32_t kCount = 2000;
  for (uint32_t i = 0; i < kCount; ++i) {
    std::vector<uint8_t> m(16, 0);
    std::memcpy(m.data(), &i, 4);
    ASSERT_TRUE(c.w->Send(c.ep, kEcho, m).ok());
    if (i % 64 == 63) c.w->Progress();
  }
  const Counters& k = c.w->counters();
  const uint64_t expected = kCount - k.faults_dropped + k.faults_duplicated;
  Status s = c.w->RunUntil([&] { return c.replies.size() >= expected; }, 30s);
  ASSERT_TRUE(s.ok()) << s.ToString() << ": " << c.replies.size() << " of " << expected;
  IgnoreError(c.w->RunUntil([] { return false; }, 20ms));  // times out by design: nothing more may come
  EXPECT_EQ(c.replies.size(), expected);
  EXPECT_EQ(k.messages_sent, kCount);
  // 10% / 10% / 20% of 2000 with a fixed seed; wide bounds, not exact figures.
  EXPECT_GT(k.faults_dropped, 100u);
  EXPECT_LT(k.faults_dropped, 300u);
  EXPECT_GT(k.faults_duplicated, 100u);
  EXPECT_GT(k.faults_reordered, 200u);
  std::set<uint32_t> distinct;
  uint32_t inversions = 0, last = 0;
  for (const auto& r : c.replies) {
    const uint32_t seq = SeqOf(r);
    ASSERT_LT(seq, kCount);
    distinct.insert(seq);
    if (seq < last) ++inversions;
    last = std::max(last, seq);
  }
  EXPECT_EQ(distinct.size(), kCount - k.faults_dropped);
  EXPECT_GT(inversions, 100u) << "held messages must arrive after later ones";
}

// A held message with nothing sent after it still goes, from the progress
// loop, after hold_us; the waiting thread sleeps until then (no spin).
TEST(NetFaults, AHeldMessageIsReleasedByTheProgressLoop) {
  PeerThread server({}, InstallEcho);
  ASSERT_TRUE(server.ok());
  WorkerOptions o;
  o.poll_mode = PollMode::kSleep;
  o.faults = FaultInjection{.reorder = 1.0, .hold_us = 30000};
  EchoClient c(server.port(), o);
  ASSERT_TRUE(c.ok());
  const uint64_t polls_before = c.w->counters().poll_iterations;
  const auto t0 = Clock::now();
  ASSERT_TRUE(c.w->Send(c.ep, kEcho, std::vector<uint8_t>(8, 1)).ok());
  EXPECT_EQ(c.w->counters().faults_reordered, 1u);
  Status s = c.w->RunUntil([&] { return !c.replies.empty(); }, 10s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GE(Clock::now() - t0, 30ms);
  EXPECT_LT(c.w->counters().poll_iterations - polls_before, 200u) << "waiting for the release must not spin";
}

TEST(NetFaults, OnlyTheListedMessageIdsAreAffected) {
  PeerThread server({}, [](Worker& w) {
    InstallEcho(w);
    Worker* self = &w;
    w.SetHandler(kEcho + 100, [self](EndpointId from, std::span<const uint8_t> p) {
      (void)self->Send(from, kEchoReply, p);
    });
  });
  ASSERT_TRUE(server.ok());
  WorkerOptions o;
  o.faults = FaultInjection{.loss = 1.0, .message_ids = {kEcho + 100}};
  EchoClient c(server.port(), o);
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.w->Send(c.ep, kEcho + 100, std::vector<uint8_t>(4, 0)).ok());
  auto reply = c.RoundTrip(std::vector<uint8_t>(4, 9));  // kEcho: untouched
  EXPECT_EQ(reply, std::vector<uint8_t>(4, 9));
  EXPECT_EQ(c.w->counters().faults_dropped, 20u);
  EXPECT_EQ(c.replies.size(), 0u);
}

TEST(NetFaults, TakenFromTheEnvironmentWhenNotSet) {
  setenv(kFaultsEnvironmentVariable, "loss=1", 1);
  {
    PeerThread server({}, InstallEcho);
    ASSERT_TRUE(server.ok());  // the server drops its echoes too
    WorkerOptions explicit_none;
    explicit_none.faults = FaultInjection{};  // set: the environment is not read
    EchoClient c(server.port(), explicit_none);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.w->Send(c.ep, kEcho, std::vector<uint8_t>(4, 0)).ok());
    (void)c.w->RunUntil([&] { return !c.replies.empty(); }, 200ms);
    EXPECT_TRUE(c.replies.empty());
    EXPECT_EQ(c.w->counters().faults_dropped, 0u);
    bool server_dropped = false;
    server.Call([&](Worker& w) { server_dropped = w.counters().faults_dropped == 1; });
    EXPECT_TRUE(server_dropped);
  }
  setenv(kFaultsEnvironmentVariable, "loss=often", 1);
  auto bad = Worker::Create({});
  unsetenv(kFaultsEnvironmentVariable);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("PULSE_NET_FAULTS"), std::string::npos) << bad.status().ToString();
}

}  // namespace
}  // namespace pulse::net::testing
