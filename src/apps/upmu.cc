// The synthetic micro-PMU stream; the model is described in
// include/pulse/apps/upmu.h.
#include "pulse/apps/upmu.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace pulse::apps {
namespace {

double WrapDegrees(double a) {
  a = std::fmod(a + 180.0, 360.0);
  if (a <= 0) a += 360.0;
  return a - 180.0;
}

bool IsAngle(UpmuChannel c) {
  const uint32_t i = static_cast<uint32_t>(c);
  return (i >= 3 && i < 6) || i >= 9;
}

}  // namespace

std::string_view UpmuChannelName(UpmuChannel c) {
  static constexpr std::string_view kNames[kUpmuChannels] = {
      "L1MAG", "L2MAG", "L3MAG", "L1ANG", "L2ANG", "L3ANG",
      "C1MAG", "C2MAG", "C3MAG", "C1ANG", "C2ANG", "C3ANG"};
  return kNames[static_cast<uint32_t>(c) % kUpmuChannels];
}

UpmuGenerator::UpmuGenerator(uint64_t seed) : rng_(seed) {
  std::uniform_real_distribution<double> u(0, 2 * std::numbers::pi);
  for (double& p : slow_phase_) p = u(rng_);
}

UpmuReading UpmuGenerator::Next() {
  UpmuReading r;
  r.tick = tick_;
  const double t = static_cast<double>(tick_) / kReadingsPerSecond;
  // Frequency: a mean-reverting walk around 60 Hz, bounded to +-0.02 Hz.
  freq_walk_ = std::clamp(0.9995 * freq_walk_ + 0.0004 * normal_(rng_), -0.02, 0.02);
  phase_deg_ = WrapDegrees(phase_deg_ + 360.0 * freq_walk_ / kReadingsPerSecond);
  const double slow_v = 0.006 * std::sin(2 * std::numbers::pi * t / 300.0 + slow_phase_[0]) +
                        0.004 * std::sin(2 * std::numbers::pi * t / 47.0 + slow_phase_[1]);
  const double slow_load = 0.06 * std::sin(2 * std::numbers::pi * t / 600.0 + slow_phase_[2]) +
                           0.04 * std::sin(2 * std::numbers::pi * t / 90.0 + slow_phase_[3]);
  for (int p = 0; p < 3; ++p) {
    walk_[p] = std::clamp(0.9999 * walk_[p] + 0.00005 * normal_(rng_), -0.003, 0.003);
    load_walk_[p] = std::clamp(0.9998 * load_walk_[p] + 0.0005 * normal_(rng_), -0.03, 0.03);
    const double v = kNominalVolts * (1 + slow_v + walk_[p] + 0.0002 * normal_(rng_));
    const double vang = WrapDegrees(phase_deg_ - 120.0 * p + 0.01 * normal_(rng_));
    const double i = kNominalAmps * (1 + slow_load + load_walk_[p] + 0.002 * normal_(rng_));
    const double iang = WrapDegrees(vang - 18.0 + 0.05 * normal_(rng_));
    r.value[p] = v;
    r.value[3 + p] = vang;
    r.value[6 + p] = i;
    r.value[9 + p] = iang;
  }
  ++tick_;
  return r;
}

uint32_t UpmuGenerator::Encode(UpmuChannel c, double value) {
  const double e = IsAngle(c) ? (WrapDegrees(value) + 180.0) * 1e6 : std::max(0.0, value) * 1e3;
  return static_cast<uint32_t>(std::min<long long>(std::llround(e), 4294967295LL));
}

double UpmuGenerator::Decode(UpmuChannel c, uint64_t encoded) {
  const double e = static_cast<double>(encoded);
  return IsAngle(c) ? e / 1e6 - 180.0 : e / 1e3;
}

}  // namespace pulse::apps
