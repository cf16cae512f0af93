// Hot-page identification (issue 16, seed 004 section 5.3): per-page read
// and write counters with exponential decay and expiry.
//
// The rule, exactly as the paper states it: a page keeps Cur_r, Cur_w (its
// read and write counts) and lastTime.  On an access at time t:
//   dt = t - lastTime;  if dt > T_l the page has expired: Cur_r = Cur_w = 0;
//   hotness = alpha * (Cur_r + Cur_w) + 1,  alpha = e^(-lambda * dt);
//   then Cur_r or Cur_w += 1 (by the access's kind) and lastTime = t.
// The page is hot if hotness > H_p, and read-hot if it is hot and
// Cur_r / Cur_w > R_rw.  With the defaults (T_l = 100 s, H_p = 4,
// lambda = 0.04, R_rw = 0.9, seed 004 section 6.1) back-to-back accesses
// make a page hot on the 5th access (hotness 1, 2, 3, 4, 5).
//
// Between accesses (where the paper is silent) a page's hotness is the one
// its last access computed, decayed by e^(-lambda * (now - lastTime)), and
// 0 once now - lastTime > T_l; hot and read-hot are judged on that value.
// Victim choice and the owner rack's summed hotness in the swap protocol
// (pulse/tier/swap_coordinator.h) use it.
//
// Time comes from an injectable Clock, in seconds.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "pulse/status.h"
#include "pulse/tier/page_address.h"

namespace pulse::tier {

// Seconds since an arbitrary epoch, never decreasing.  Implementations say
// whether they are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double NowSeconds() const = 0;
};

// std::chrono::steady_clock.  Thread-safe.
class SteadyClock final : public Clock {
 public:
  double NowSeconds() const override;
};

// A clock the caller sets (tests).  Not thread-safe.
class ManualClock final : public Clock {
 public:
  double NowSeconds() const override { return now_; }
  void Set(double seconds) { now_ = seconds; }
  void Advance(double seconds) { now_ += seconds; }

 private:
  double now_ = 0;
};

struct HotnessParams {
  double lifetime_s = 100;    // T_l: a page unaccessed this long has expired
  double hot_threshold = 4;   // H_p: hot above it
  double decay = 0.04;        // lambda, per second
  double read_ratio = 0.9;    // R_rw: read-hot above Cur_r / Cur_w
  // InvalidArgument naming the field unless lifetime_s > 0, hot_threshold
  // >= 0, decay >= 0, read_ratio >= 0 (all finite).
  Status Validate() const;
};

enum class AccessKind { kRead, kWrite };

struct PageHeat {
  double hotness = 0;
  uint64_t reads = 0;   // Cur_r (0 once expired)
  uint64_t writes = 0;  // Cur_w
  bool hot = false;
  bool read_hot = false;
};

// The hotness metadata of one CPU node (or one rack daemon).  Not
// thread-safe; the clock must outlive it.
class HotnessTracker {
 public:
  // params must be valid (HotnessParams::Validate).
  HotnessTracker(HotnessParams params, const Clock* clock);

  // Counts an access to `page` now; returns the page's heat as the access
  // computed it (the paper's formula).
  PageHeat Record(PageId page, AccessKind kind);
  // The page's heat now without counting an access (decayed, or zero if
  // expired or never accessed).
  PageHeat Peek(PageId page) const;
  // Drops the page's metadata (swap step 4: the owner disables it).
  void Forget(PageId page);

  const HotnessParams& params() const { return params_; }
  const Clock& clock() const { return *clock_; }

 private:
  struct Counters {
    uint64_t reads = 0;
    uint64_t writes = 0;
    double last_s = 0;
    double hotness = 0;  // computed by the last access
  };
  HotnessParams params_;
  const Clock* clock_;
  std::unordered_map<PageId, Counters> pages_;
};

// A rack's heat of `page`: the sum of its trackers' Peek (hotness, reads,
// writes), judged hot / read-hot against `params` as one page would be.
PageHeat SumHeat(std::span<const HotnessTracker* const> trackers, PageId page, const HotnessParams& params);

}  // namespace pulse::tier
