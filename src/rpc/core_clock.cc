#include "rpc/core_clock.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace pulse::rpc {
namespace {

using Clock = std::chrono::steady_clock;

// 64 dependent adds per loop: the loop's own counter and branch run in
// parallel with the chain and do not lengthen it.  The addend is a register
// the compiler cannot see into: some cores fold chains of add-immediate at
// register renaming (measured here: 14 "adds" per ns with an immediate,
// 2.7 with a register), which would inflate the estimate.
#if defined(__x86_64__)
#define PULSE_ADD1(x, one) asm volatile("add %1, %0" : "+r"(x) : "r"(one))
#elif defined(__aarch64__)
#define PULSE_ADD1(x, one) asm volatile("add %0, %0, %1" : "+r"(x) : "r"(one))
#else
#define PULSE_ADD1(x, one) asm volatile("" : "+r"(x)); (x) += (one)
#endif
#define PULSE_ADD8(x, one) PULSE_ADD1(x, one); PULSE_ADD1(x, one); PULSE_ADD1(x, one); PULSE_ADD1(x, one); \
                           PULSE_ADD1(x, one); PULSE_ADD1(x, one); PULSE_ADD1(x, one); PULSE_ADD1(x, one)

uint64_t AddChain(uint64_t loops) {
  uint64_t x = 0, one = 1;
  asm volatile("" : "+r"(one));  // opaque: not a known constant
  for (uint64_t i = 0; i < loops; ++i) {
    PULSE_ADD8(x, one); PULSE_ADD8(x, one); PULSE_ADD8(x, one); PULSE_ADD8(x, one);
    PULSE_ADD8(x, one); PULSE_ADD8(x, one); PULSE_ADD8(x, one); PULSE_ADD8(x, one);
  }
  return x;
}

}  // namespace

double MeasureHostGhz(std::chrono::microseconds budget) {
  constexpr int kRuns = 8;
  // ~64K adds per loop block of 1024 loops: about 20 us at 3 GHz.
  constexpr uint64_t kLoops = 1 << 10;
  double best = 0;
  const auto per_run = budget / kRuns;
  for (int run = 0; run < kRuns; ++run) {
    uint64_t adds = 0;
    const auto start = Clock::now();
    auto now = start;
    do {
      adds += AddChain(kLoops);
      now = Clock::now();
    } while (now - start < per_run);
    const double ns = std::chrono::duration<double, std::nano>(now - start).count();
    best = std::max(best, static_cast<double>(adds) / ns);
  }
  return best;
}

double CpuinfoGhz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) return 0;
    return std::strtod(line.c_str() + colon + 1, nullptr) / 1000.0;  // 0 if not a number
  }
  return 0;
}

void SpinUntil(Clock::time_point until) {
  while (Clock::now() < until) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}

}  // namespace pulse::rpc
