// Time elapsed since a steady-clock instant, in whole units, for the time
// counters that stats and benchmarks report.  Thread-safe (pure functions).
#pragma once

#include <chrono>
#include <cstdint>

namespace pulse {

// Microseconds from `start` to now.
inline uint64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
}

// Nanoseconds from `start` to now.
inline uint64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace pulse
