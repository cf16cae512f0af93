#include "compiler/control_flow.h"

#include <algorithm>
#include <set>

namespace pulse::compiler {

ControlFlow BuildControlFlow(const std::vector<BpfInsn>& insns) {
  const int n = static_cast<int>(insns.size());
  ControlFlow cfg;
  std::vector<bool> leader(n + 1, false);
  leader[0] = true;
  for (int slot = 0; slot < n; ++slot) {
    const BpfInsn& in = insns[slot];
    if (in.slots == 0) continue;
    if (in.is_branch()) leader[slot + 1 + in.off] = true;
    if (in.is_jmp() && in.op() != kBpfCall) leader[NextSlot(in, slot)] = true;
  }
  cfg.block_of.assign(n + 1, -1);
  for (int slot = 0; slot < n; ++slot) {
    if (leader[slot]) cfg.blocks.push_back(BasicBlock{slot, slot, slot, {}});
    cfg.block_of[slot] = static_cast<int>(cfg.blocks.size()) - 1;
    cfg.blocks.back().end = slot + 1;
    if (insns[slot].slots > 0) cfg.blocks.back().last = slot;
  }
  for (auto& b : cfg.blocks) {
    const BpfInsn& in = insns[b.last];
    const int fall = NextSlot(in, b.last);
    // A branch to just past the last instruction (allowed by the checks, so
    // that the translator can say "control falls off the end") has no block.
    const int target = b.last + 1 + in.off;
    if (in.is_branch() && target < n) b.succ.push_back(cfg.block_of[target]);
    const bool falls = !in.is_exit() && !(in.is_branch() && in.op() == kBpfJa);
    if (falls && fall < n) b.succ.push_back(cfg.block_of[fall]);
  }
  return cfg;
}

std::vector<std::pair<int, int>> FindLoops(const ControlFlow& cfg) {
  std::vector<std::pair<int, int>> loops;
  if (cfg.blocks.empty()) return loops;
  std::vector<int> state(cfg.blocks.size(), 0);  // 0 new, 1 on the DFS stack, 2 done
  std::vector<std::pair<int, size_t>> stack = {{0, 0}};
  state[0] = 1;
  while (!stack.empty()) {
    auto& [b, next] = stack.back();
    if (next < cfg.blocks[b].succ.size()) {
      const int s = cfg.blocks[b].succ[next++];
      if (state[s] == 1) {
        loops.emplace_back(cfg.blocks[b].last, cfg.blocks[s].start);
      } else if (state[s] == 0) {
        state[s] = 1;
        stack.push_back({s, 0});
      }
    } else {
      state[b] = 2;
      stack.pop_back();
    }
  }
  return loops;
}

void LayOut(const std::vector<BpfInsn>& insns, ControlFlow* cfg) {
  const size_t nb = cfg->blocks.size();
  std::vector<bool> reach(nb, false);
  if (nb) reach[0] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = 0; b < nb; ++b)
      if (reach[b])
        for (int s : cfg->blocks[b].succ)
          if (!reach[s]) reach[s] = changed = true;
  }
  std::vector<int> indegree(nb, 0);
  for (size_t b = 0; b < nb; ++b)
    if (reach[b])
      for (int s : cfg->blocks[b].succ) ++indegree[s];
  // Kahn's algorithm, taking the lowest address first.
  std::set<int> ready;
  if (nb) ready.insert(0);
  cfg->order.clear();
  cfg->order_pos.assign(nb, -1);
  while (!ready.empty()) {
    const int b = *ready.begin();
    ready.erase(ready.begin());
    cfg->order_pos[b] = static_cast<int>(cfg->order.size());
    cfg->order.push_back(b);
    for (int s : cfg->blocks[b].succ)
      if (--indegree[s] == 0) ready.insert(s);
  }
  cfg->tail.assign(nb, ControlFlow::kNotTail);
  for (size_t k = cfg->order.size(); k-- > 0;) {
    const int b = cfg->order[k];
    const BasicBlock& blk = cfg->blocks[b];
    const int size = blk.end - blk.start;
    if (insns[blk.last].is_exit()) {
      cfg->tail[b] = size;
      continue;
    }
    int longest = 0;
    for (int s : blk.succ) longest = std::max(longest, cfg->tail[s]);
    cfg->tail[b] = longest >= ControlFlow::kNotTail ? ControlFlow::kNotTail : size + longest;
  }
}

}  // namespace pulse::compiler
