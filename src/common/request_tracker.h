// One request tracker for every request/answer exchange that re-sends on
// silence: traversals (src/client), RPC calls (src/rpc), control calls
// (src/protocol/control_client.cc) and one-sided operations over messages
// (src/net/rma_sw.cc).  It owns the ids in flight, their deadlines, the
// re-send schedule (RetryPolicy), the classification of answers that match
// nothing pending (stale; duplicate if the id was completed here recently)
// and the completion callbacks.  It knows nothing of the transport: it calls
// the user's `resend` function when a request is due again, and reads time
// from an injectable TrackerClock, so it is tested with a fake clock and a
// fake transport (tests/common/request_tracker_test.cc).
//
// Thread-safety: none.  A tracker belongs to the thread that drives its
// user's event loop (single-threaded by contract, like Client).  Callbacks
// (resend, timeout_status, done) run on that thread, inside Service() or
// RunReady(), and may call back into the tracker (Track, Complete, Take...).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pulse/status.h"

namespace pulse {

// Where the tracker reads the time.  Tests inject a fake one.
class TrackerClock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;
  virtual ~TrackerClock() = default;
  virtual time_point Now() const = 0;
  // std::chrono::steady_clock (a process-wide object; never destroyed).
  static const TrackerClock& Steady();
};

// When a request is sent again and when it is given up.  After the first
// send the tracker waits `interval`; each re-send multiplies the wait by
// `backoff` (capped at max_interval).  A request is given up (Timeout) when
// its wait ends after max_attempts sends (0: no limit) or when `total` has
// passed since it was tracked (or restarted), whichever comes first.  Waits
// are counted from the moment a re-send is made.
struct RetryPolicy {
  using duration = TrackerClock::duration;
  duration interval = duration::max();
  uint32_t backoff = 1;
  duration max_interval = duration::max();
  uint32_t max_attempts = 0;
  duration total = duration::max();

  // `per_attempt` per send, `attempts` sends in all (traversals, RPC calls).
  static RetryPolicy Fixed(duration per_attempt, uint32_t attempts);
  // Re-sent at 1/8, 3/8 and 7/8 of `timeout`, given up at `timeout`
  // (control calls that may be re-sent).
  static RetryPolicy Spread(duration timeout);
  // Sent once, given up after `timeout`.
  static RetryPolicy Once(duration timeout);
  // Re-sent after `first`, then doubling up to `cap`, never given up (the
  // one-sided operations: their waiter or a failed endpoint ends them).
  static RetryPolicy Doubling(duration first, duration cap);
};

// Counts kept by a tracker (its users keep their own, user-visible ones).
struct TrackerCounters {
  uint64_t tracked = 0;      // requests tracked (Track)
  uint64_t resends = 0;      // re-send callbacks made
  uint64_t timeouts = 0;     // requests given up
  uint64_t completed = 0;    // requests completed (Complete), timeouts excluded
  uint64_t stale = 0;        // answers to ids not pending (duplicates included)
  uint64_t duplicates = 0;   // of those, answers to ids recently completed (or taken) here
};

// What made a re-send: the answer's wait ran out, or a ResendAt came due.
enum class ResendReason { kTimeout, kScheduled };

// Requests of type `Request` (the user's state of one request: what to send
// again, what to accumulate) completing with a Result<Answer>.
template <typename Request, typename Answer>
class RequestTracker {
 public:
  using time_point = TrackerClock::time_point;
  using Done = std::function<void(Result<Answer>)>;
  // Sends the request again.  The tracker has already counted the attempt
  // and set the next deadline; the function may change them (ExpireNow when
  // the send failed, Hold while the peer cannot be reached) or end the
  // request (Complete, Take).
  using ResendFn = std::function<void(uint64_t id, Request& request, ResendReason why)>;
  // The Timeout status of a request given up after `attempts` sends.
  using TimeoutFn = std::function<Status(uint64_t id, const Request& request, uint32_t attempts)>;

  // `clock` must outlive the tracker.  Without timeout_status the status is
  // Timeout("request <id>: no answer after <n> attempts").
  RequestTracker(const TrackerClock* clock, ResendFn resend, TimeoutFn timeout_status = {})
      : clock_(clock), resend_(std::move(resend)), timeout_status_(std::move(timeout_status)) {}

  RequestTracker(const RequestTracker&) = delete;
  RequestTracker& operator=(const RequestTracker&) = delete;

  // Tracks `request`, sent once (or about to be sent) under `id`, which must
  // not be pending.  `done` runs once, in RunReady(), with its answer or
  // Timeout.  Returns the tracked request (valid until it ends).
  Request& Track(uint64_t id, Request request, const RetryPolicy& policy, Done done) {
    const time_point now = clock_->Now();
    Entry e{std::move(request), std::move(done), policy};
    Arm(e, now);
    ++counters_.tracked;
    auto [it, inserted] = pending_.insert_or_assign(id, std::move(e));
    (void)inserted;
    return it->second.request;
  }

  // The pending request `id`, or nullptr.
  Request* Find(uint64_t id) {
    auto it = pending_.find(id);
    return it == pending_.end() ? nullptr : &it->second.request;
  }
  bool IsPending(uint64_t id) const { return pending_.count(id) != 0; }
  // Sends made for `id` since it was tracked or last restarted (0 if none).
  uint32_t attempts(uint64_t id) const {
    auto it = pending_.find(id);
    return it == pending_.end() ? 0 : it->second.attempts;
  }

  // An answer for `id` arrived: its pending request, or nullptr when none
  // is pending (counted stale, and duplicate if `id` was completed here).
  Request* OnAnswer(uint64_t id) {
    if (Request* r = Find(id)) return r;
    ++counters_.stale;
    if (recent_.count(id)) ++counters_.duplicates;
    return nullptr;
  }

  // Ends `id` (pending) with `result`: its callback is queued for RunReady.
  void Complete(uint64_t id, Result<Answer> result) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    ready_.emplace_back(std::move(it->second.done), std::move(result));
    pending_.erase(it);
    ++counters_.completed;
    Remember(id);
  }

  // Queues `done` with `result` for a request that was never tracked (it
  // ended before reaching the network), so that it completes like the rest.
  void Post(Done done, Result<Answer> result) { ready_.emplace_back(std::move(done), std::move(result)); }

  // Ends `id` (pending) without completing it, e.g. to continue under a new
  // id: its request and callback go to the caller.
  std::pair<Request, Done> Take(uint64_t id) {
    auto it = pending_.find(id);
    std::pair<Request, Done> out{std::move(it->second.request), std::move(it->second.done)};
    pending_.erase(it);
    Remember(id);
    return out;
  }

  // `id` was sent afresh (not a re-send): a new budget from now.
  void Restart(uint64_t id) {
    if (auto it = pending_.find(id); it != pending_.end()) Arm(it->second, clock_->Now());
  }
  // Sends `id` again at `at` (ResendReason::kScheduled) with a new budget
  // from then, e.g. to ride out a peer that is restarting.
  void ResendAt(uint64_t id, time_point at) {
    if (auto it = pending_.find(id); it != pending_.end()) {
      it->second.next_at = at;
      it->second.fresh_budget = true;
    }
  }
  // `id` is due now (its send failed: the next Service re-sends or gives up).
  void ExpireNow(uint64_t id) {
    if (auto it = pending_.find(id); it != pending_.end()) it->second.next_at = clock_->Now();
  }
  // Every pending request is due now (e.g. the path to the peers failed).
  void ExpireAll() {
    const time_point now = clock_->Now();
    for (auto& [id, e] : pending_) e.next_at = now;
  }
  // No re-send and no timeout for `id` until Restart or ResendAt: something
  // else (a failed connection) will end it.
  void Hold(uint64_t id) {
    if (auto it = pending_.find(id); it != pending_.end()) it->second.next_at = time_point::max();
  }

  // The ids whose deadline has come (what Service() will act on).
  std::vector<uint64_t> Due() const {
    const time_point now = clock_->Now();
    std::vector<uint64_t> due;
    for (const auto& [id, e] : pending_)
      if (e.next_at <= now) due.push_back(id);
    return due;
  }

  // Re-sends every due request with budget left; completes the others with
  // Timeout.  Returns how many it acted on.
  size_t Service() {
    size_t acted = 0;
    for (uint64_t id : Due()) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;  // ended by an earlier callback
      Entry& e = it->second;
      const time_point now = clock_->Now();
      if (e.next_at > now) continue;       // re-armed by an earlier callback
      ++acted;
      ResendReason why = ResendReason::kTimeout;
      if (e.fresh_budget) {
        Arm(e, now);
        why = ResendReason::kScheduled;
      } else if ((e.policy.max_attempts != 0 && e.attempts >= e.policy.max_attempts) || now >= e.give_up_at) {
        ++counters_.timeouts;
        Status s = timeout_status_ ? timeout_status_(id, e.request, e.attempts)
                                   : Status::Timeout("request " + std::to_string(id) + ": no answer after " +
                                                     std::to_string(e.attempts) + " attempts");
        ready_.emplace_back(std::move(e.done), std::move(s));
        pending_.erase(it);  // not remembered: a late answer is stale, not a duplicate
        continue;
      } else {
        ++e.attempts;
        e.wait = Scale(e.wait, e.policy.backoff, e.policy.max_interval);
        e.next_at = std::min(Add(now, e.wait), e.give_up_at);
      }
      ++counters_.resends;
      resend_(id, e.request, why);  // may end or re-arm `id`
    }
    return acted;
  }

  // The earliest deadline of a pending request (time_point::max() if none).
  time_point NextDeadline() const {
    time_point next = time_point::max();
    for (const auto& [id, e] : pending_) next = std::min(next, e.next_at);
    return next;
  }

  // Runs the queued completion callbacks (a callback may track new
  // requests or wait).  Returns how many ran.
  size_t RunReady() {
    size_t n = 0;
    while (!ready_.empty()) {
      auto item = std::move(ready_.front());
      ready_.pop_front();
      ++n;
      if (item.first) item.first(std::move(item.second));
    }
    return n;
  }
  bool has_ready() const { return !ready_.empty(); }

  size_t size() const { return pending_.size(); }
  bool empty() const { return pending_.empty(); }
  // Calls f(id, request) for every pending request (f must not track or end any).
  template <typename F>
  void ForEach(F&& f) {
    for (auto& [id, e] : pending_) f(id, e.request);
  }
  const TrackerCounters& counters() const { return counters_; }

 private:
  // Ids remembered after they end, to tell duplicate answers from stale ones.
  static constexpr size_t kRecentIds = 4096;

  struct Entry {
    Request request;
    Done done;
    RetryPolicy policy;
    uint32_t attempts = 0;
    TrackerClock::duration wait{};
    time_point next_at{};
    time_point give_up_at{};
    bool fresh_budget = false;  // the next due is a ResendAt: a new budget
  };

  static time_point Add(time_point t, TrackerClock::duration d) {
    return d >= time_point::max() - t ? time_point::max() : t + d;
  }
  static TrackerClock::duration Scale(TrackerClock::duration d, uint32_t factor, TrackerClock::duration cap) {
    if (factor <= 1) return std::min(d, cap);
    if (d > cap / factor) return cap;
    return std::min(d * factor, cap);
  }
  // One send made at `now`: a new budget.
  static void Arm(Entry& e, time_point now) {
    e.attempts = 1;
    e.fresh_budget = false;
    e.wait = e.policy.interval;  // the cap applies to the grown waits
    e.give_up_at = Add(now, e.policy.total);
    e.next_at = std::min(Add(now, e.wait), e.give_up_at);
  }
  void Remember(uint64_t id) {
    if (!recent_.insert(id).second) return;
    recent_order_.push_back(id);
    if (recent_order_.size() > kRecentIds) {
      recent_.erase(recent_order_.front());
      recent_order_.pop_front();
    }
  }

  const TrackerClock* clock_;
  ResendFn resend_;
  TimeoutFn timeout_status_;
  std::unordered_map<uint64_t, Entry> pending_;
  std::deque<std::pair<Done, Result<Answer>>> ready_;
  std::unordered_set<uint64_t> recent_;
  std::deque<uint64_t> recent_order_;
  TrackerCounters counters_;
};

}  // namespace pulse
