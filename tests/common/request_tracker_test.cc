// The request tracker against a fake clock and a fake transport: loss,
// duplication, reordering, timeouts, late answers, many in flight, and a
// randomized differential test against a plain model of the policy.
#include "common/request_tracker.h"

#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace pulse {
namespace {

using std::chrono::milliseconds;
using time_point = TrackerClock::time_point;

using testing::FakeClock;

// What a request carries: its own answer is `id * 7`.
struct Req {
  uint64_t id = 0;
};
using Tracker = RequestTracker<Req, uint64_t>;

// A transport that only records sends: tests decide what gets answered.
struct Harness {
  FakeClock clock;
  std::vector<std::pair<uint64_t, ResendReason>> resent;  // (id, why)
  std::vector<time_point> resent_at;
  std::map<uint64_t, std::vector<Result<uint64_t>>> done;  // every callback run, by id
  Tracker tracker{&clock, [this](uint64_t id, Req&, ResendReason why) {
                    resent.emplace_back(id, why);
                    resent_at.push_back(clock.Now());
                  }};

  void Track(uint64_t id, const RetryPolicy& policy) {
    tracker.Track(id, Req{id}, policy, [this, id](Result<uint64_t> r) { done[id].push_back(std::move(r)); });
  }
  // Delivers an answer as a user would: complete it if pending.
  bool Answer(uint64_t id) {
    if (tracker.OnAnswer(id) == nullptr) return false;
    tracker.Complete(id, id * 7);
    return true;
  }
  // Advances the clock to `t` one millisecond at a time, servicing timers.
  void RunTo(time_point t) {
    while (clock.Now() < t) {
      clock.Advance(milliseconds(1));
      tracker.Service();
      tracker.RunReady();
    }
  }
};

TEST(RequestTracker, AnswerCompletesOnceWithItsAnswer) {
  Harness h;
  h.Track(5, RetryPolicy::Fixed(milliseconds(10), 3));
  EXPECT_TRUE(h.tracker.IsPending(5));
  EXPECT_TRUE(h.Answer(5));
  EXPECT_FALSE(h.tracker.IsPending(5));
  EXPECT_TRUE(h.done.empty()) << "callbacks run in RunReady, not inside Complete";
  EXPECT_EQ(h.tracker.RunReady(), 1u);
  ASSERT_EQ(h.done[5].size(), 1u);
  EXPECT_EQ(h.done[5][0].value(), 35u);
  EXPECT_TRUE(h.resent.empty());
}

TEST(RequestTracker, LostRequestIsResentAfterItsInterval) {
  Harness h;
  h.Track(1, RetryPolicy::Fixed(milliseconds(10), 3));
  h.RunTo(h.clock.start() + milliseconds(9));
  EXPECT_TRUE(h.resent.empty());
  h.RunTo(h.clock.start() + milliseconds(10));
  ASSERT_EQ(h.resent.size(), 1u);
  EXPECT_EQ(h.resent[0].second, ResendReason::kTimeout);
  EXPECT_EQ(h.tracker.attempts(1), 2u);
  EXPECT_TRUE(h.Answer(1));  // the re-sent copy got through
  h.tracker.RunReady();
  EXPECT_EQ(h.done[1].size(), 1u);
}

TEST(RequestTracker, BudgetExhaustedTimesOutNamingTheRequest) {
  Harness h;
  h.Track(0xabc, RetryPolicy::Fixed(milliseconds(10), 3));
  h.RunTo(h.clock.start() + milliseconds(29));
  EXPECT_EQ(h.resent.size(), 2u);
  EXPECT_TRUE(h.done.empty());
  h.RunTo(h.clock.start() + milliseconds(30));
  ASSERT_EQ(h.done[0xabc].size(), 1u);
  const Status& s = h.done[0xabc][0].status();
  EXPECT_EQ(s.code(), Status::Code::kTimeout);
  EXPECT_NE(s.message().find(std::to_string(0xabc)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("3 attempts"), std::string::npos) << s.message();
  EXPECT_EQ(h.tracker.counters().timeouts, 1u);
  EXPECT_TRUE(h.tracker.empty());
}

TEST(RequestTracker, TimeoutStatusComesFromTheUser) {
  FakeClock clock;
  std::optional<Result<int>> out;
  RequestTracker<std::string, int> t(
      &clock, [](uint64_t, std::string&, ResendReason) {},
      [](uint64_t id, const std::string& what, uint32_t attempts) {
        return Status::Timeout(what + " #" + std::to_string(id) + " x" + std::to_string(attempts));
      });
  t.Track(9, "alloc", RetryPolicy::Once(milliseconds(50)), [&](Result<int> r) { out = std::move(r); });
  clock.Advance(milliseconds(50));
  EXPECT_EQ(t.Service(), 1u);
  t.RunReady();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status().message(), "alloc #9 x1");
}

TEST(RequestTracker, DuplicateAnswersAreCountedAndIgnored) {
  Harness h;
  h.Track(3, RetryPolicy::Fixed(milliseconds(10), 3));
  EXPECT_TRUE(h.Answer(3));
  EXPECT_FALSE(h.Answer(3));
  EXPECT_FALSE(h.Answer(3));
  h.tracker.RunReady();
  EXPECT_EQ(h.done[3].size(), 1u);
  EXPECT_EQ(h.tracker.counters().stale, 2u);
  EXPECT_EQ(h.tracker.counters().duplicates, 2u);
  EXPECT_FALSE(h.Answer(99));  // never tracked: stale only
  EXPECT_EQ(h.tracker.counters().stale, 3u);
  EXPECT_EQ(h.tracker.counters().duplicates, 2u);
}

TEST(RequestTracker, LateAnswersAfterAResendAndAfterCompletion) {
  Harness h;
  h.Track(4, RetryPolicy::Fixed(milliseconds(10), 4));
  h.RunTo(h.clock.start() + milliseconds(25));  // two re-sends: three copies out
  EXPECT_EQ(h.resent.size(), 2u);
  EXPECT_TRUE(h.Answer(4));   // the first copy's answer, late
  EXPECT_FALSE(h.Answer(4));  // the second's
  EXPECT_FALSE(h.Answer(4));  // the third's
  h.RunTo(h.clock.start() + milliseconds(100));
  EXPECT_EQ(h.resent.size(), 2u) << "a completed request is never re-sent";
  ASSERT_EQ(h.done[4].size(), 1u);
  EXPECT_EQ(h.done[4][0].value(), 28u);
  EXPECT_EQ(h.tracker.counters().duplicates, 2u);
}

TEST(RequestTracker, AnswerAfterTimeoutIsStaleNotDuplicate) {
  Harness h;
  h.Track(8, RetryPolicy::Fixed(milliseconds(10), 1));
  h.RunTo(h.clock.start() + milliseconds(10));
  ASSERT_EQ(h.done[8].size(), 1u);
  EXPECT_FALSE(h.Answer(8));
  h.tracker.RunReady();
  EXPECT_EQ(h.done[8].size(), 1u);
  EXPECT_EQ(h.done[8][0].status().code(), Status::Code::kTimeout);
  EXPECT_EQ(h.tracker.counters().stale, 1u);
  EXPECT_EQ(h.tracker.counters().duplicates, 0u);
}

TEST(RequestTracker, ReorderedAnswersReachTheirOwnRequests) {
  Harness h;
  for (uint64_t id = 1; id <= 200; ++id) h.Track(id, RetryPolicy::Fixed(milliseconds(10), 2));
  EXPECT_EQ(h.tracker.size(), 200u);
  std::vector<uint64_t> order;
  for (uint64_t id = 1; id <= 200; ++id) order.push_back(id);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  for (uint64_t id : order) EXPECT_TRUE(h.Answer(id));
  h.tracker.RunReady();
  for (uint64_t id = 1; id <= 200; ++id) {
    ASSERT_EQ(h.done[id].size(), 1u) << id;
    EXPECT_EQ(h.done[id][0].value(), id * 7);
  }
  EXPECT_TRUE(h.tracker.empty());
}

TEST(RequestTracker, SpreadPolicyResendsAtOneThreeSevenEighths) {
  Harness h;
  h.Track(1, RetryPolicy::Spread(milliseconds(800)));
  h.RunTo(h.clock.start() + milliseconds(2000));
  ASSERT_EQ(h.resent_at.size(), 3u);
  EXPECT_EQ(h.resent_at[0] - h.clock.start(), milliseconds(100));
  EXPECT_EQ(h.resent_at[1] - h.clock.start(), milliseconds(300));
  EXPECT_EQ(h.resent_at[2] - h.clock.start(), milliseconds(700));
  ASSERT_EQ(h.done[1].size(), 1u);
  EXPECT_EQ(h.done[1][0].status().code(), Status::Code::kTimeout);
  EXPECT_EQ(h.tracker.NextDeadline(), time_point::max());
}

TEST(RequestTracker, SpreadPolicyTimesOutAtItsTimeout) {
  Harness h;
  h.Track(1, RetryPolicy::Spread(milliseconds(800)));
  h.RunTo(h.clock.start() + milliseconds(799));
  EXPECT_TRUE(h.done.empty());
  h.RunTo(h.clock.start() + milliseconds(800));
  EXPECT_EQ(h.done[1].size(), 1u);
}

TEST(RequestTracker, DoublingPolicyDoublesUpToItsCapAndNeverGivesUp) {
  Harness h;
  h.Track(1, RetryPolicy::Doubling(milliseconds(10), milliseconds(40)));
  h.RunTo(h.clock.start() + milliseconds(200));
  std::vector<int64_t> at;
  for (auto t : h.resent_at) at.push_back(std::chrono::duration_cast<milliseconds>(t - h.clock.start()).count());
  // Waits 10, 20, 40, 40, 40...
  EXPECT_EQ(at, (std::vector<int64_t>{10, 30, 70, 110, 150, 190}));
  EXPECT_TRUE(h.done.empty());
}

TEST(RequestTracker, ResendAtGivesAFreshBudget) {
  Harness h;
  h.Track(1, RetryPolicy::Fixed(milliseconds(10), 2));
  h.RunTo(h.clock.start() + milliseconds(10));  // attempt 2
  h.tracker.ResendAt(1, h.clock.Now() + milliseconds(5));
  h.RunTo(h.clock.start() + milliseconds(15));
  ASSERT_EQ(h.resent.size(), 2u);
  EXPECT_EQ(h.resent[1].second, ResendReason::kScheduled);
  EXPECT_EQ(h.tracker.attempts(1), 1u);
  h.RunTo(h.clock.start() + milliseconds(34));
  EXPECT_TRUE(h.done.empty());  // 15 + 2 x 10
  h.RunTo(h.clock.start() + milliseconds(35));
  EXPECT_EQ(h.done[1].size(), 1u);
}

TEST(RequestTracker, ExpireNowHoldRestartAndTake) {
  Harness h;
  h.Track(1, RetryPolicy::Fixed(milliseconds(10), 5));
  h.Track(2, RetryPolicy::Fixed(milliseconds(10), 5));
  h.tracker.ExpireNow(1);
  EXPECT_EQ(h.tracker.Due(), std::vector<uint64_t>{1});
  h.tracker.Service();
  EXPECT_EQ(h.resent.size(), 1u);
  h.tracker.Hold(2);
  h.tracker.Hold(1);
  h.RunTo(h.clock.start() + milliseconds(500));
  EXPECT_EQ(h.resent.size(), 1u);
  EXPECT_TRUE(h.done.empty());
  h.tracker.Restart(2);
  EXPECT_EQ(h.tracker.NextDeadline(), h.clock.Now() + milliseconds(10));
  auto [req, done] = h.tracker.Take(1);
  EXPECT_EQ(req.id, 1u);
  EXPECT_FALSE(h.tracker.IsPending(1));
  EXPECT_FALSE(h.Answer(1));
  EXPECT_EQ(h.tracker.counters().duplicates, 1u);
  h.tracker.ExpireAll();
  EXPECT_EQ(h.tracker.Due(), std::vector<uint64_t>{2});
}

TEST(RequestTracker, ResendCallbackMayEndOtherRequests) {
  FakeClock clock;
  std::vector<uint64_t> finished;
  RequestTracker<int, int>* self = nullptr;
  RequestTracker<int, int> t(&clock, [&](uint64_t id, int&, ResendReason) {
    // A failed path: the first re-send fails every request.
    for (uint64_t other : {1, 2, 3})
      if (other != id) self->Complete(other, Status::Unavailable("path down"));
    self->Complete(id, Status::Unavailable("path down"));
  });
  self = &t;
  for (uint64_t id : {1, 2, 3}) t.Track(id, 0, RetryPolicy::Fixed(milliseconds(10), 3), [&, id](Result<int> r) {
    EXPECT_FALSE(r.ok());
    finished.push_back(id);
  });
  clock.Advance(milliseconds(10));
  EXPECT_EQ(t.Service(), 1u);
  t.RunReady();
  EXPECT_EQ(finished.size(), 3u);
  EXPECT_TRUE(t.empty());
}

// Randomized differential test.  A fake network loses, duplicates and delays
// (so reorders) every request and answer by a seeded schedule; a peer
// answers every copy it gets.  A plain model of the Fixed policy says, from
// the same schedule, when each send happens and whether the request is
// answered before its budget ends; the tracker must agree exactly: each
// request completes once, with its own answer, or times out at
// start + attempts * interval.
TEST(RequestTracker, RandomLossDuplicationReorderingMatchesThePolicyModel) {
  constexpr int kInterval = 10;  // ms
  constexpr uint32_t kAttempts = 4;
  uint64_t answered = 0, timed_out = 0, resent = 0, duplicates = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    FakeClock clock;
    const time_point t0 = clock.start();
    auto at_ms = [&](time_point t) { return std::chrono::duration_cast<milliseconds>(t - t0).count(); };

    // The fate of copy `attempt` of request `id`: the times its answers
    // reach the client relative to that send (empty: lost).
    std::map<std::pair<uint64_t, uint32_t>, std::vector<int64_t>> fate;
    auto fate_of = [&](uint64_t id, uint32_t attempt) -> const std::vector<int64_t>& {
      auto key = std::make_pair(id, attempt);
      auto it = fate.find(key);
      if (it != fate.end()) return it->second;
      std::vector<int64_t> arrivals;
      const int copies = rng() % 100 < 35 ? 0 : (rng() % 100 < 20 ? 2 : 1);  // lost, duplicated, once
      for (int c = 0; c < copies; ++c) {
        if (rng() % 100 < 30) continue;  // the answer is lost
        const int answers = rng() % 100 < 20 ? 2 : 1;
        for (int a = 0; a < answers; ++a) arrivals.push_back(1 + static_cast<int64_t>(rng() % 45));
      }
      return fate.emplace(key, std::move(arrivals)).first->second;
    };

    // Requests start at random times in the first 50 ms.
    const uint64_t n = 60;
    std::vector<int64_t> start(n + 1);
    for (uint64_t id = 1; id <= n; ++id) start[id] = static_cast<int64_t>(rng() % 50);

    // Arrivals by time (ms since t0): (id).
    std::multimap<int64_t, uint64_t> arrivals;
    std::map<uint64_t, std::vector<int64_t>> sends;  // the tracker's, observed
    auto send = [&](uint64_t id, uint32_t attempt) {
      const int64_t now = at_ms(clock.Now());
      sends[id].push_back(now);
      for (int64_t d : fate_of(id, attempt)) arrivals.emplace(now + d, id);
    };
    std::map<uint64_t, std::vector<std::pair<int64_t, Result<uint64_t>>>> done;
    Tracker tracker(&clock, [&](uint64_t id, Req&, ResendReason) { send(id, tracker.attempts(id)); });

    for (int64_t ms = 0; ms <= 400; ++ms) {
      clock.Set(t0 + milliseconds(ms));
      for (uint64_t id = 1; id <= n; ++id) {
        if (start[id] != ms) continue;
        tracker.Track(id, Req{id}, RetryPolicy::Fixed(milliseconds(kInterval), kAttempts),
                      [&, id](Result<uint64_t> r) { done[id].emplace_back(at_ms(clock.Now()), std::move(r)); });
        send(id, 1);
      }
      // Answers due now, in a shuffled order, then timers.
      std::vector<uint64_t> now_arriving;
      for (auto [it, end] = arrivals.equal_range(ms); it != end; ++it) now_arriving.push_back(it->second);
      std::shuffle(now_arriving.begin(), now_arriving.end(), rng);
      for (uint64_t id : now_arriving)
        if (tracker.OnAnswer(id) != nullptr) tracker.Complete(id, id * 7);
      tracker.Service();
      tracker.RunReady();
    }

    // The model: send k (1-based) at start + (k-1) * interval while no
    // answer has arrived by then; answered iff an answer of a made send
    // arrives by start + attempts * interval (answers before timers).
    for (uint64_t id = 1; id <= n; ++id) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " request " + std::to_string(id));
      std::vector<int64_t> model_sends;
      int64_t first_answer = INT64_MAX;
      for (uint32_t k = 1; k <= kAttempts; ++k) {
        const int64_t t = start[id] + (k - 1) * kInterval;
        if (first_answer <= t) break;
        model_sends.push_back(t);
        for (int64_t d : fate_of(id, k)) first_answer = std::min(first_answer, t + d);
      }
      const int64_t give_up = start[id] + int64_t{kAttempts} * kInterval;
      EXPECT_EQ(sends[id], model_sends);
      ASSERT_EQ(done[id].size(), 1u) << "completes exactly once";
      const auto& [when, result] = done[id][0];
      if (first_answer <= give_up) {
        ASSERT_TRUE(result.ok()) << result.status().ToString();
        EXPECT_EQ(result.value(), id * 7);
        EXPECT_EQ(when, first_answer);
        ++answered;
      } else {
        ++timed_out;
        EXPECT_EQ(result.status().code(), Status::Code::kTimeout);
        EXPECT_EQ(when, give_up);
      }
    }
    EXPECT_TRUE(tracker.empty());
    resent += tracker.counters().resends;
    duplicates += tracker.counters().duplicates;
  }
  // The schedules exercise every path.
  EXPECT_GT(answered, 0u);
  EXPECT_GT(timed_out, 0u);
  EXPECT_GT(resent, 0u);
  EXPECT_GT(duplicates, 0u);
}

}  // namespace
}  // namespace pulse
