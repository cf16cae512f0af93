#include "agent/adaptive_switch.h"

#include <algorithm>

namespace pulse::agent {

double HitRateThreshold(double fabric_bytes_per_s, double agent_bytes_per_s) {
  if (fabric_bytes_per_s <= 0 || agent_bytes_per_s <= 0) return 0.5;
  return std::clamp(fabric_bytes_per_s / agent_bytes_per_s, 0.0, 1.0);
}

bool AdaptiveSwitch::Record(bool hit) {
  ++seen_;
  if (hit) ++hits_;
  if (seen_ < window_) return false;
  last_rate_ = static_cast<double>(hits_) / seen_;
  seen_ = hits_ = 0;
  ++windows_;
  if (!adaptive_) return false;
  if (on_ && last_rate_ < threshold_) {
    on_ = false;
    ++turned_off_;
    return true;
  }
  if (!on_ && last_rate_ >= threshold_) {
    on_ = true;
    ++turned_on_;
    return true;
  }
  return false;
}

}  // namespace pulse::agent
