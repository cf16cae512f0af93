// The control flow of one BPF function: basic blocks, loops (cycles), and a
// topological layout order.  Internal to the iterator compiler.
#pragma once

#include <utility>
#include <vector>

#include "compiler/bpf_insn.h"

namespace pulse::compiler {

struct BasicBlock {
  int start = 0, end = 0;  // slots [start, end)
  int last = 0;            // the slot of the last instruction
  std::vector<int> succ;   // successor blocks
};

struct ControlFlow {
  static constexpr int kNotTail = 1 << 20;

  std::vector<BasicBlock> blocks;  // in address order; blocks[0] is the entry
  std::vector<int> block_of;       // slot -> block
  // The blocks reachable from the entry in a topological order (the flow
  // must be acyclic), as close to address order as the edges allow: clang
  // sometimes places a block after one it jumps back to without a loop.
  std::vector<int> order;
  std::vector<int> order_pos;      // block -> index in order (-1: unreachable)
  // Instructions from a block's start to an exit on its longest path, if
  // every path from it reaches an exit without joining other code; kNotTail
  // otherwise.
  std::vector<int> tail;

  bool starts_block(int slot) const {
    return slot < static_cast<int>(block_of.size()) - 1 && blocks[block_of[slot]].start == slot;
  }
};

// The slot after `in` (ld_imm64 takes two).
inline int NextSlot(const BpfInsn& in, int slot) { return slot + (in.slots > 1 ? in.slots : 1); }

// Builds the blocks of `insns`, whose jump targets must all be instructions.
ControlFlow BuildControlFlow(const std::vector<BpfInsn>& insns);

// The back edges of the flow (loops), as (slot of the jump, slot jumped to).
std::vector<std::pair<int, int>> FindLoops(const ControlFlow& cfg);

// Fills order, order_pos and tail; the flow must have no loops.
void LayOut(const std::vector<BpfInsn>& insns, ControlFlow* cfg);

}  // namespace pulse::compiler
