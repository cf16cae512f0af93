// The client's wait loop tells the fabric whether replies are awaited: a
// loop whose sources await nothing waits idle (sleeps once the base window
// has passed), one with a request outstanding polls the awaiting window.
// Real Worker, no peers; asserted with the Worker's counters.
#include "client/event_loop.h"

#include <gtest/gtest.h>

namespace pulse {
namespace {

using namespace std::chrono_literals;

class FakeSource final : public EventSource {
 public:
  void Service() override {}
  time_point NextDeadline() const override { return time_point::max(); }
  bool RunReady() override { return false; }
  bool has_ready() const override { return false; }
  bool awaiting_replies() const override { return awaiting; }
  bool awaiting = false;
};

std::unique_ptr<net::Worker> IdleWorker() {
  net::WorkerOptions o;
  o.poll_window_us = 0;  // idle: sleep at once
  o.awaiting_poll_window_us = net::kMaxAwaitingPollWindowUs;
  auto w = net::Worker::Create(o);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? std::move(*w) : nullptr;
}

TEST(EventLoop, NothingOutstandingWaitsIdle) {
  auto w = IdleWorker();
  ASSERT_NE(w, nullptr);
  EventLoop loop(w.get());
  FakeSource source;
  loop.Add(&source);
  EXPECT_EQ(loop.DriveUntil([] { return false; }, 2ms).code(), Status::Code::kTimeout);
  EXPECT_EQ(w->counters().awaiting_polls, 0u);
  EXPECT_GE(w->counters().sleeps, 1u);
  loop.Remove(&source);
}

TEST(EventLoop, AnOutstandingRequestPollsTheAwaitingWindowForThatWaitOnly) {
  auto w = IdleWorker();
  ASSERT_NE(w, nullptr);
  EventLoop loop(w.get());
  FakeSource idle, waiting;
  waiting.awaiting = true;
  loop.Add(&idle);
  loop.Add(&waiting);
  EXPECT_EQ(loop.DriveUntil([] { return false; }, 2ms).code(), Status::Code::kTimeout);
  const uint64_t awaiting = w->counters().awaiting_polls;
  EXPECT_GE(awaiting, 1u);
  // The loop does not leave the worker awaiting after its wait: a wait of
  // the worker's own (one-sided operations, connecting) uses the base window.
  (void)w->RunUntil([] { return false; }, 2ms);
  EXPECT_EQ(w->counters().awaiting_polls, awaiting);
  // The answer came: the next wait is idle again.
  waiting.awaiting = false;
  EXPECT_EQ(loop.DriveUntil([] { return false; }, 2ms).code(), Status::Code::kTimeout);
  EXPECT_EQ(w->counters().awaiting_polls, awaiting);
  loop.Remove(&idle);
  loop.Remove(&waiting);
}

}  // namespace
}  // namespace pulse
