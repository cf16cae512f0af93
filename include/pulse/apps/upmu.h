// pulse::apps::UpmuGenerator: synthetic micro-PMU (uPMU) readings for the
// BTrDB-like time-series application.
//
// The data are SYNTHETIC.  They are modelled on the Open uPMU data set
// (LBNL's distribution-grid micro-phasor measurements, as BTrDB stores
// them): 120 readings per second, each with the voltage magnitude and phase
// angle and the current magnitude and phase angle of the three phases
// (channels L1MAG..L3MAG, L1ANG..L3ANG, C1MAG..C3MAG, C1ANG..C3ANG).  Values
// resemble a 7.2 kV (line-to-neutral) / 60 Hz distribution feeder:
//   - voltage magnitudes around 7200 V: slow load-driven drift (two slow
//     sinusoids, minutes long, +-1 %), a bounded random walk and white
//     measurement noise (~0.02 %);
//   - phase angles relative to a nominal 60 Hz reference: the grid
//     frequency wanders slowly around 60 Hz (+-0.02 Hz), so the angles
//     rotate slowly; phases sit 120 degrees apart; angles wrap to
//     (-180, 180] degrees;
//   - current magnitudes around 200 A with +-10 % load drift and noise; the
//     current lags its voltage by a power-factor angle of about 18 degrees.
// Everything derives from the seed: the same seed gives the same stream.
//
// Thread-safety: not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string_view>

namespace pulse::apps {

// The twelve channels of a reading, in the Open uPMU order.
enum class UpmuChannel : uint32_t {
  kL1Mag, kL2Mag, kL3Mag, kL1Ang, kL2Ang, kL3Ang,
  kC1Mag, kC2Mag, kC3Mag, kC1Ang, kC2Ang, kC3Ang,
};
inline constexpr uint32_t kUpmuChannels = 12;
std::string_view UpmuChannelName(UpmuChannel c);

struct UpmuReading {
  uint64_t tick = 0;  // reading index: time = tick / 120 s
  std::array<double, kUpmuChannels> value{};  // volts, amperes, degrees (by channel)
  double operator[](UpmuChannel c) const { return value[static_cast<uint32_t>(c)]; }
};

class UpmuGenerator {
 public:
  static constexpr double kReadingsPerSecond = 120.0;
  static constexpr double kNominalVolts = 7200.0;
  static constexpr double kNominalHz = 60.0;
  static constexpr double kNominalAmps = 200.0;

  explicit UpmuGenerator(uint64_t seed);
  // The next reading (ticks 0, 1, 2, ...).
  UpmuReading Next();

  // Fixed-point encodings for integer aggregation (what the time-series tree
  // stores): magnitudes in milli-units (mV, mA); angles as micro-degrees
  // shifted by +180 degrees, so every value is a non-negative uint32.
  static uint32_t Encode(UpmuChannel c, double value);
  static double Decode(UpmuChannel c, uint64_t encoded);

 private:
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  uint64_t tick_ = 0;
  double phase_deg_ = 0;  // reference angle drift from the frequency deviation
  std::array<double, 3> walk_{};       // per-phase voltage random walk (fraction)
  std::array<double, 3> load_walk_{};  // per-phase load random walk (fraction)
  double freq_walk_ = 0;               // Hz
  std::array<double, 4> slow_phase_{}; // random phases of the slow drifts
};

}  // namespace pulse::apps
