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
  };
  for (Mode m : {Mode{PollMode::kAdaptive, 0}, Mode{PollMode::kAdaptive, 50},
                 Mode{PollMode::kBusy, 0}, Mode{PollMode::kSleep, 0}}) {
    WorkerOptions o;
    o.poll_mode = m.mode;
    o.poll_window_us = m.window;
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

}  // namespace
}  // namespace pulse::net::testing
