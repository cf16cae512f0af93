// Waiting: poll modes, Wake(), timeouts, and blocking calls from handlers.
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "net/test_util.h"

namespace pulse::net::testing {
namespace {

// State letter of thread `tid` of this process ('S' = sleeping).
char ThreadState(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

TEST(NetWait, WakeBreaksASleepingWait) {
  WorkerOptions o;
  o.poll_mode = PollMode::kSleep;
  o.max_sleep_us = 30'000'000;  // so that only Wake() can end the sleep early
  auto w = MakeWorker(o);
  ASSERT_NE(w, nullptr);
  std::atomic<pid_t> tid{0};
  Status result;
  Clock::duration waited{};
  std::thread t([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    auto start = Clock::now();
    result = w->WaitForEvent(start + 20s);
    waited = Clock::now() - start;
  });
  // Wait (bounded) until the thread is asleep in the kernel, then wake it.
  auto deadline = Clock::now() + 10s;
  while ((tid.load() == 0 || ThreadState(tid.load()) != 'S') && Clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(ThreadState(tid.load()), 'S');
  w->Wake();
  t.join();
  EXPECT_TRUE(result.ok()) << result.ToString();
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(w->counters().wake_calls, 1u);
  EXPECT_GE(w->counters().sleeps, 1u);
}

TEST(NetWait, WakeBeforeWaitIsNotLost) {
  auto w = MakeWorker();
  ASSERT_NE(w, nullptr);
  w->Wake();
  auto start = Clock::now();
  EXPECT_TRUE(w->WaitForEvent(start + 20s).ok());
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(NetWait, RunUntilTimesOutInEveryMode) {
  for (PollMode mode : {PollMode::kAdaptive, PollMode::kBusy, PollMode::kSleep}) {
    WorkerOptions o;
    o.poll_mode = mode;
    auto w = MakeWorker(o);
    ASSERT_NE(w, nullptr);
    auto start = Clock::now();
    Status s = w->RunUntil([] { return false; }, 30ms);
    auto took = Clock::now() - start;
    EXPECT_EQ(s.code(), Status::Code::kTimeout) << s.ToString();
    EXPECT_GE(took, 30ms);
    EXPECT_LT(took, 3s);
  }
}

TEST(NetWait, IdleAdaptiveWorkerSleepsInsteadOfSpinning) {
  WorkerOptions o;
  o.poll_mode = PollMode::kAdaptive;
  o.poll_window_us = 50;
  auto w = MakeWorker(o);
  ASSERT_NE(w, nullptr);
  (void)w->RunUntil([] { return false; }, 300ms);
  const Counters& k = w->counters();
  EXPECT_GE(k.sleeps, 1u);
  // A busy loop does millions of iterations in 300 ms; an idle adaptive one
  // polls only during the short window after creation.
  EXPECT_LT(k.poll_iterations, 20000u);
}

// The longer window applies only while the owner says it awaits replies:
// an idle owner's wait sleeps at once (base window 0), one awaiting replies
// polls with the awaiting window.  Asserted with counters, not time.
TEST(NetWait, OnlyAnOwnerAwaitingRepliesPollsTheLongerWindow) {
  WorkerOptions o;
  o.poll_mode = PollMode::kAdaptive;
  o.poll_window_us = 0;
  o.awaiting_poll_window_us = kMaxAwaitingPollWindowUs;
  auto w = MakeWorker(o);
  ASSERT_NE(w, nullptr);
  const Counters& k = w->counters();

  const uint64_t polls_before = k.poll_iterations;
  EXPECT_EQ(w->RunUntil([] { return false; }, 2ms).code(), Status::Code::kTimeout);
  EXPECT_EQ(k.awaiting_polls, 0u);
  EXPECT_GE(k.sleeps, 1u) << "nothing outstanding: the wait sleeps";
  // Each wait progresses once or twice before it sleeps; polling through
  // the 2 ms would take far more.
  EXPECT_LE(k.poll_iterations - polls_before, 4 * k.sleeps) << "... at once, without polling";

  w->SetAwaitingReplies(true);
  (void)w->RunUntil([] { return false; }, 2ms);
  EXPECT_GE(k.awaiting_polls, 1u);

  w->SetAwaitingReplies(false);
  const uint64_t awaiting = k.awaiting_polls;
  (void)w->RunUntil([] { return false; }, 2ms);
  EXPECT_EQ(k.awaiting_polls, awaiting) << "idle again: the base window";
}

// A condition that changes without an event (a one-sided write landing)
// ends the wait while the worker polls: `done` is asked between polls, so
// the wait never sleeps.  The window (10 s) outlasts the test; `done` turns
// true on its third call, which only polling can make.
TEST(NetWait, RunUntilAsksDoneBetweenTheWindowsPolls) {
  WorkerOptions o;
  o.poll_mode = PollMode::kAdaptive;
  o.poll_window_us = 10'000'000;
  auto w = MakeWorker(o);
  ASSERT_NE(w, nullptr);
  int calls = 0;
  Status s = w->RunUntil([&calls] { return ++calls >= 3; }, 20s);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_GE(calls, 3);
  EXPECT_EQ(w->counters().sleeps, 0u) << "polling should have seen the condition";
}

// before_sleep runs once the worker is armed, before each sleep; true skips
// that sleep (the caller found what it waits for while announcing it).
TEST(NetWait, BeforeSleepRunsBeforeEachSleepAndCanSkipIt) {
  WorkerOptions o;
  o.poll_mode = PollMode::kAdaptive;
  o.poll_window_us = 0;  // straight to the sleep
  auto w = MakeWorker(o);
  ASSERT_NE(w, nullptr);
  const Counters& k = w->counters();

  bool found = false;
  int hooks = 0;
  Status s = w->RunUntil([&found] { return found; }, 20s, [&] {
    ++hooks;
    found = true;
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(k.sleeps, 0u);
  EXPECT_EQ(k.sleeps_skipped, 1u);

  // A hook that says no: every sleep is preceded by it (the last hook may
  // find the deadline passed and not sleep).
  hooks = 0;
  const uint64_t sleeps_before = k.sleeps;
  EXPECT_EQ(w->RunUntil([] { return false; }, 20ms, [&hooks] { return ++hooks, false; }).code(),
            Status::Code::kTimeout);
  const uint64_t slept = k.sleeps - sleeps_before;
  EXPECT_GE(slept, 1u);
  EXPECT_GE(static_cast<uint64_t>(hooks), slept);
  EXPECT_LE(static_cast<uint64_t>(hooks), slept + 1);
  EXPECT_EQ(k.sleeps_skipped, 1u);
}

TEST(NetWait, AnAwaitingWindowBeyondTheBoundIsRejected) {
  WorkerOptions o;
  o.awaiting_poll_window_us = kMaxAwaitingPollWindowUs + 1;
  auto w = Worker::Create(o);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Status::Code::kInvalidArgument);
}

TEST(NetWait, PingPongInEveryPollMode) {
  struct Mode {
    PollMode mode;
    uint32_t window;
    bool idle_core_rule = false;  // with the machine's real CpuDemand
  };
  for (Mode m : {Mode{PollMode::kAdaptive, 0}, Mode{PollMode::kAdaptive, 50},
                 Mode{PollMode::kAdaptive, 50, true}, Mode{PollMode::kBusy, 0}, Mode{PollMode::kSleep, 0}}) {
    WorkerOptions o;
    o.poll_mode = m.mode;
    o.poll_window_us = m.window;
    o.poll_when_core_idle = m.idle_core_rule;
    PeerThread server(o, InstallEcho);
    ASSERT_TRUE(server.ok());
    auto w = MakeWorker(o);
    ASSERT_NE(w, nullptr);
    int replies = 0;
    w->SetHandler(kEchoReply, [&](EndpointId, std::span<const uint8_t>) { ++replies; });
    auto ep = w->Connect("127.0.0.1", server.port(), 10s);
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    const uint8_t b[16] = {};
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(w->Send(*ep, kEcho, b).ok());
      ASSERT_TRUE(w->RunUntil([&] { return replies == i + 1; }, 10s).ok()) << i;
    }
    if (m.mode == PollMode::kSleep) {
      EXPECT_GT(w->counters().wakeups, 0u);
    }
    if (m.idle_core_rule) {
      EXPECT_GE(w->counters().cpu_demand_reads, 1u) << "whatever the load decided, the rule was asked";
    }
  }
}

TEST(NetWait, BlockingCallsFromAHandlerAreRejected) {
  PeerThread server({}, InstallEcho);
  ASSERT_TRUE(server.ok());
  auto w = MakeWorker();
  ASSERT_NE(w, nullptr);
  auto ep = w->Connect("127.0.0.1", server.port(), 10s);
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  bool ran = false;
  w->SetHandler(kEchoReply, [&](EndpointId from, std::span<const uint8_t>) {
    ran = true;
    EXPECT_EQ(w->RunUntil([] { return true; }, 1s).code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(w->WaitForEvent(Clock::now()).code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(w->Connect("127.0.0.1", server.port(), 1s).status().code(),
              Status::Code::kInvalidArgument);
    EXPECT_EQ(w->Flush(from, 1s).code(), Status::Code::kInvalidArgument);
    EXPECT_FALSE(w->Progress());
    // Sending from a handler is fine.
    EXPECT_TRUE(w->Send(from, 77, std::span<const uint8_t>()).ok());
  });
  const uint8_t b[1] = {5};
  ASSERT_TRUE(w->Send(*ep, kEcho, b).ok());
  ASSERT_TRUE(w->RunUntil([&] { return ran; }, 10s).ok());
}

// ---- the idle-core rule (WorkerOptions::poll_when_core_idle) -------------
// Asserted with an injected CpuDemand and the counters, not with time.

// A worker under the rule whose CPU demand comes from `demand`, after one
// echo round trip (traffic, so that its poll window is open).  The echo
// peer sleeps at once, so it never competes for the window.
struct RuleWorker {
  PeerThread server;
  std::unique_ptr<Worker> w;
  EndpointId ep = kInvalidEndpoint;

  RuleWorker(uint32_t window_us, std::function<CpuDemand()> demand)
      : server(SleepingPeerOptions(), InstallEcho) {
    WorkerOptions o;
    o.poll_mode = PollMode::kAdaptive;
    o.poll_window_us = window_us;
    o.poll_when_core_idle = true;
    o.cpu_demand = std::move(demand);
    w = MakeWorker(o);
  }
  static WorkerOptions SleepingPeerOptions() {
    WorkerOptions o;
    o.poll_window_us = 0;
    return o;
  }
  // One echo round trip; false if it failed.
  bool RoundTrip() {
    if (!server.ok() || w == nullptr) return false;
    if (ep == kInvalidEndpoint) {
      auto e = w->Connect("127.0.0.1", server.port(), 10s);
      if (!e.ok()) return false;
      ep = *e;
      w->SetHandler(kEchoReply, [this](EndpointId, std::span<const uint8_t>) { ++replies; });
    }
    const uint8_t b[8] = {};
    const int want = replies + 1;
    return w->Send(ep, kEcho, b).ok() && w->RunUntil([&] { return replies == want; }, 10s).ok();
  }
  int replies = 0;
};

TEST(NetWaitIdleCoreRule, PollsWhileACoreIsIdleThenSleepsWhenTheWindowEnds) {
  std::atomic<uint64_t> calls{0};
  // Three runnable threads on two cores: the peer of a hop may wait, the
  // window still polls.
  RuleWorker r(20'000, [&] {
    ++calls;
    return CpuDemand{.runnable = 3, .cores = 2, .preemptions = 0};
  });
  ASSERT_TRUE(r.RoundTrip());
  const Counters& k = r.w->counters();
  const Counters before = k;
  // Nothing to do for 500 ms: the 20 ms window polls (the demand re-read
  // every few microseconds, never cut), then the wait sleeps.
  EXPECT_EQ(r.w->RunUntil([] { return false; }, 500ms).code(), Status::Code::kTimeout);
  EXPECT_EQ(k.polls_cut, before.polls_cut) << "a core is idle: the window is not cut";
  EXPECT_GE(k.cpu_demand_reads - before.cpu_demand_reads, 2u) << "re-read while polling";
  EXPECT_EQ(k.cpu_demand_reads, calls.load()) << "every read went to the injected source";
  EXPECT_GT(k.poll_iterations - before.poll_iterations, k.cpu_demand_reads - before.cpu_demand_reads)
      << "read every few microseconds, not per poll";
  EXPECT_GE(k.sleeps - before.sleeps, 1u) << "the window still ends: nothing spins when idle";
}

// A read that is slow spaces the next one: reads stay about a tenth of the
// polling time (kCpuDemandReadSpacing).  Each injected read takes 2 ms, so
// in a 30 ms window the next read comes no sooner than 20 ms after the
// first began, and at most two fall inside it (the fixed 10 us recheck
// alone would read about fourteen times).
TEST(NetWaitIdleCoreRule, ASlowReadSpacesTheNextOne) {
  std::atomic<uint64_t> calls{0};
  RuleWorker r(30'000, [&] {
    ++calls;
    std::this_thread::sleep_for(2ms);
    return CpuDemand{.runnable = 1, .cores = 2, .preemptions = 0};
  });
  ASSERT_TRUE(r.RoundTrip());
  const Counters& k = r.w->counters();
  const Counters before = k;
  EXPECT_EQ(r.w->RunUntil([] { return false; }, 60ms).code(), Status::Code::kTimeout);
  const uint64_t reads = k.cpu_demand_reads - before.cpu_demand_reads;
  EXPECT_GE(reads, 1u);
  EXPECT_LE(reads, 3u) << "each 2 ms read should push the next one 18 ms on";
  EXPECT_EQ(k.polls_cut, before.polls_cut);
}

TEST(NetWaitIdleCoreRule, SleepsAtOnceWhenThreadsWaitForACpu) {
  // Two threads beyond the cores: someone other than our peer waits.
  RuleWorker r(1'000'000, [] { return CpuDemand{.runnable = 4, .cores = 2, .preemptions = 0}; });
  ASSERT_TRUE(r.RoundTrip());
  const Counters& k = r.w->counters();
  const Counters before = k;
  // A 1 s window that polled would keep this wait from sleeping at all.
  EXPECT_EQ(r.w->RunUntil([] { return false; }, 200ms).code(), Status::Code::kTimeout);
  const uint64_t sleeps = k.sleeps - before.sleeps;
  EXPECT_GE(sleeps, 1u);
  EXPECT_GE(k.polls_cut - before.polls_cut, 1u);
  // At most one read per window, each cut it; windows within
  // kCpuBusyHoldUs of a busy read are cut without reading.
  const uint64_t reads = k.cpu_demand_reads - before.cpu_demand_reads;
  EXPECT_GE(reads, 1u);
  EXPECT_LE(reads, k.polls_cut - before.polls_cut);
  // Each wait progresses once or twice before it sleeps.
  EXPECT_LE(k.poll_iterations - before.poll_iterations, 4 * sleeps) << "... at once, without polling";
  // Traffic still gets through: the echo is answered from the sleep.
  EXPECT_TRUE(r.RoundTrip());
}

TEST(NetWaitIdleCoreRule, StopsPollingOnceThisThreadIsPreempted) {
  uint64_t switches = 0;  // every read sees one more involuntary switch
  RuleWorker r(1'000'000, [&] { return CpuDemand{.runnable = 1, .cores = 2, .preemptions = ++switches}; });
  ASSERT_TRUE(r.RoundTrip());
  const Counters& k = r.w->counters();
  const Counters before = k;
  EXPECT_EQ(r.w->RunUntil([] { return false; }, 200ms).code(), Status::Code::kTimeout);
  EXPECT_GE(k.polls_cut - before.polls_cut, 1u);
  EXPECT_GE(k.sleeps - before.sleeps, 1u) << "cut by the preemption, the window sleeps";
  // Each window: the read as it opens, the re-read that saw the preemption
  // (the last window may instead end at the deadline, after its first read).
  const uint64_t cuts = k.polls_cut - before.polls_cut;
  const uint64_t reads = k.cpu_demand_reads - before.cpu_demand_reads;
  EXPECT_GE(reads, 2 * cuts);
  EXPECT_LE(reads, 2 * cuts + 1);
}

TEST(NetWaitIdleCoreRule, OffByDefaultAndTheSourceIsNeverRead) {
  EXPECT_FALSE(WorkerOptions{}.poll_when_core_idle);
  bool read = false;
  WorkerOptions o;
  o.poll_window_us = 1000;
  o.cpu_demand = [&] {
    read = true;
    return CpuDemand{};
  };
  PeerThread server({}, InstallEcho);
  ASSERT_TRUE(server.ok());
  auto w = MakeWorker(o);
  ASSERT_NE(w, nullptr);
  (void)w->RunUntil([] { return false; }, 20ms);
  EXPECT_FALSE(read);
  EXPECT_EQ(w->counters().cpu_demand_reads, 0u);
  EXPECT_EQ(w->counters().polls_cut, 0u);
}

// The machine's own figures: the reading thread runs, so at least one
// thread is runnable; the switch count never goes back.
TEST(NetWaitIdleCoreRule, ReadCpuDemandReadsThisMachine) {
  const CpuDemand a = ReadCpuDemand();
  EXPECT_GE(a.runnable, 1u);
  EXPECT_LT(a.runnable, UINT32_MAX) << "/proc/loadavg could not be read";
  EXPECT_GE(a.cores, 1u);
  std::this_thread::yield();
  const CpuDemand b = ReadCpuDemand();
  EXPECT_GE(b.preemptions, a.preemptions);
  EXPECT_EQ(b.cores, a.cores);
}

}  // namespace
}  // namespace pulse::net::testing
