// Small deterministic random sources for the graph generators and the
// applications' sampling: the same seed gives the same numbers on every
// platform and standard library (std::uniform_*_distribution does not
// promise that).
//
// Thread-safety: one generator per thread.
#pragma once

#include <cstdint>

namespace pulse::graph {

// SplitMix64 (Steele, Lea, Flood 2014).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) (bound > 0; the modulo bias is below 2^-32 for
  // bounds under 2^32).
  uint64_t Below(uint64_t bound) { return Next() % bound; }
  // Uniform in [0, 1), 53 bits.
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace pulse::graph
