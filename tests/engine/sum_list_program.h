// Test helper: the program several suites run over a list of
// {next @0, value @8} nodes: it adds every value into sp[0].
#pragma once

namespace pulse::testing {

inline constexpr const char* kSumListProgram = R"(
    LOAD data
    ADD sp[0], data[8]
    COMPARE data[0], 0
    JUMP_EQ end
    MOVE cur_ptr, data[0]
    NEXT_ITER
  end:
    RETURN)";

}  // namespace pulse::testing
