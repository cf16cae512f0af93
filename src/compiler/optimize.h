// Optimizations on a laid-out pulse program (forward jumps only): jump
// threading and tail duplication of short terminal blocks, copy
// propagation, dead-code and unreachable-code elimination.  Internal.
#pragma once

#include <cstdint>
#include <vector>

#include "pulse/isa.h"

namespace pulse::compiler {

struct LinkedInsn {
  isa::Instruction insn;    // jumps: a = Imm(absolute target index)
  int function = -1;        // 0: end(), 1: next(), -1: added by the linker
  int bpf_slot = -1;
  uint32_t data_extent = 0; // window bytes an indexed data operand may read
};

// Rewrites code in place; keeps its meaning (the same far-memory stores,
// scratch pad writes, cur_ptr and outcome on every path).
void Optimize(std::vector<LinkedInsn>* code);

// Helpers shared with the linker.
bool IsTerminalInsn(const isa::Instruction& in);
bool FallsThrough(const isa::Instruction& in);

}  // namespace pulse::compiler
