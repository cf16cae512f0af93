// A TrackerClock that moves only when a test says so.
#pragma once

#include <chrono>

#include "common/request_tracker.h"

namespace pulse::testing {

class FakeClock final : public TrackerClock {
 public:
  time_point Now() const override { return now_; }
  void Advance(duration d) { now_ += d; }
  void Set(time_point t) { now_ = t; }
  // Where every FakeClock starts.
  time_point start() const { return time_point{} + std::chrono::hours(1); }

 private:
  time_point now_ = time_point{} + std::chrono::hours(1);
};

}  // namespace pulse::testing
