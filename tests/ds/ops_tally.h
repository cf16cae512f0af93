// Counts the operations the data-structure tests run (each read in each
// execution mode is one) and prints the total when ds_test ends, towards
// the ">= 1 M operations" (tests/ds/ops_tally.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace pulse::ds::testing {

// Adds n operations of `suite` to the tally (thread-safe); printed per suite
// and in total at the end of the run.
void TallyOps(std::string_view suite, uint64_t n);

}  // namespace pulse::ds::testing
