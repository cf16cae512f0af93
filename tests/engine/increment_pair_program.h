// Test helper: the STORE-bearing program the exactly-once tests run over
// pairs {counter @0, next @8} -> {counter @0, 0}, usually on two memory
// nodes: it increments the first counter (the new value in sp[0]), follows
// `next`, increments the second counter (the new value in sp[8]).
#pragma once

namespace pulse::testing {

inline constexpr const char* kIncrementPairProgram = R"(
      LOAD data, 16
      MOVE r1, cur_ptr
      MOVE r2, data[0]
      ADD r2, 1
      STORE [r1], r2
      COMPARE data[8], 0
      JUMP_EQ last
      MOVE sp[0], r2
      MOVE cur_ptr, data[8]
      NEXT_ITER
    last:
      MOVE sp[8], r2
      RETURN)";

}  // namespace pulse::testing
