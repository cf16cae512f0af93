// The libFuzzer entry point of one target; PULSE_FUZZ_TARGET names it
// (fuzz/CMakeLists.txt builds one executable per target from this file).
#include <cstdlib>

#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pulse::fuzz::Target* target = pulse::fuzz::FindTarget(PULSE_FUZZ_TARGET);
  if (target == nullptr) pulse::fuzz::Fail("no fuzz target named " PULSE_FUZZ_TARGET);
  target->run(std::span<const uint8_t>(data, size));
  return 0;
}
