#include "common/request_tracker.h"

namespace pulse {
namespace {

class SteadyClock final : public TrackerClock {
 public:
  time_point Now() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace

const TrackerClock& TrackerClock::Steady() {
  static const SteadyClock* clock = new SteadyClock();
  return *clock;
}

RetryPolicy RetryPolicy::Fixed(duration per_attempt, uint32_t attempts) {
  RetryPolicy p;
  p.interval = per_attempt;
  p.max_attempts = attempts;
  return p;
}

RetryPolicy RetryPolicy::Spread(duration timeout) {
  // Waits of 1/8, 1/4, 1/2 and the rest: re-sends at 1/8, 3/8, 7/8.
  RetryPolicy p;
  p.interval = timeout / 8;
  p.backoff = 2;
  p.total = timeout;
  return p;
}

RetryPolicy RetryPolicy::Once(duration timeout) {
  RetryPolicy p;
  p.interval = timeout;
  p.max_attempts = 1;
  p.total = timeout;
  return p;
}

RetryPolicy RetryPolicy::Doubling(duration first, duration cap) {
  RetryPolicy p;
  p.interval = first;
  p.backoff = 2;
  p.max_interval = cap;
  return p;
}

}  // namespace pulse
