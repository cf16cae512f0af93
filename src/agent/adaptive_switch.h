// Whether the dynamic cache pays (seed 003 III-A, Eqs. 1-3).  Fetching a
// chunk of S bytes from the memory node takes S/B_net; through the agent's
// cache it takes (1-h)*S/B_net + S/B_intra for hit rate h, which is shorter
// iff h > B_net / B_intra: the threshold is the ratio of the fabric's
// bandwidth to the agent's (50% on the paper's testbed, the default).
//
// The switch watches page lookups in windows of `window` lookups.  While on
// it is fed the cache's real outcomes; at the end of a window whose hit rate
// is below the threshold it turns off.  While off it is fed predictions
// (would the page have been cached?) and turns back on at the end of a
// window whose predicted rate reaches the threshold.  Single-threaded.
#pragma once

#include <cstdint>

namespace pulse::agent {

// Eq. 3: the least hit rate at which the dynamic cache shortens a fetch,
// B_net / B_intra, clamped to [0, 1].  Non-positive bandwidths give 0.5.
double HitRateThreshold(double fabric_bytes_per_s, double agent_bytes_per_s);

class AdaptiveSwitch {
 public:
  AdaptiveSwitch(double threshold, uint32_t window, bool adaptive)
      : threshold_(threshold), window_(window == 0 ? 1 : window), adaptive_(adaptive) {}

  // One lookup's outcome (real while on, predicted while off).  Returns true
  // if this lookup ended a window and flipped the switch.
  bool Record(bool hit);

  bool on() const { return on_; }
  double threshold() const { return threshold_; }
  uint64_t windows() const { return windows_; }
  uint64_t turned_off() const { return turned_off_; }
  uint64_t turned_on() const { return turned_on_; }
  // The last full window's hit rate (-1 before the first).
  double last_rate() const { return last_rate_; }

 private:
  double threshold_;
  uint32_t window_;
  bool adaptive_;
  bool on_ = true;
  uint32_t seen_ = 0;
  uint32_t hits_ = 0;
  uint64_t windows_ = 0;
  uint64_t turned_off_ = 0;
  uint64_t turned_on_ = 0;
  double last_rate_ = -1;
};

}  // namespace pulse::agent
