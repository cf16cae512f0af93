#include "compiler/link.h"

#include <algorithm>

#include <fmt/format.h>

namespace pulse::compiler {
namespace {

using isa::Opcode;
using isa::Operand;
using isa::OperandKind;

uint32_t RoundUp8(uint64_t v) { return static_cast<uint32_t>((v + 7) / 8 * 8); }

// Zeroes the stack slots [base, base + frame) before every NEXT_ITER and
// RETURN.  Stack slots are dead once the iteration ends (registers and locals
// do not survive it), but left as they are they sit at the end of the
// iterator's scratch bytes and every message carrying the pad would carry
// them (messages trim only the pad's zero tail): a scan's answer of a few
// hundred bytes went out as 2.4 KB.  A jump to a terminal lands on its
// zeroing.
void ClearStackAtTerminals(uint32_t base, uint32_t frame, std::vector<LinkedInsn>* code) {
  std::vector<LinkedInsn> out;
  std::vector<int64_t> moved(code->size());
  for (size_t i = 0; i < code->size(); ++i) {
    const LinkedInsn& l = (*code)[i];
    moved[i] = static_cast<int64_t>(out.size());
    if (IsTerminalInsn(l.insn)) {
      for (uint32_t off = 0; off < frame; off += 8) {
        LinkedInsn zero;
        zero.insn.op = Opcode::kMove;
        zero.insn.a = Operand::Sp(base + off);
        zero.insn.b = Operand::Imm(0);
        zero.function = -1;
        zero.bpf_slot = l.bpf_slot;
        out.push_back(zero);
      }
    }
    out.push_back(l);
  }
  for (auto& l : out) {
    if (!isa::IsJump(l.insn.op)) continue;
    const auto t = static_cast<size_t>(l.insn.a.value);  // the translator's targets are in range
    l.insn.a.value = t < moved.size() ? moved[t] : static_cast<int64_t>(out.size());
  }
  *code = std::move(out);
}

}  // namespace

bool LinkIteration(const std::string& iterator, std::vector<Emitted> end_code,
                   std::vector<Emitted> next_code, const LinkOptions& options,
                   DiagnosticSink* diags, LinkedProgram* out) {
  // 1. Where BPF stack slots live in the scratch pad.
  int64_t stack_low = 0;
  uint32_t user_extent = 0;
  bool user_unbounded = false;
  for (const auto* fn : {&end_code, &next_code}) {
    for (const auto& e : *fn) {
      if (e.stack_a || e.stack_b) stack_low = std::min(stack_low, e.stack_low);
      user_extent = std::max(user_extent, e.scratch_extent);
      user_unbounded = user_unbounded || e.scratch_unbounded;
    }
  }
  const uint32_t frame = RoundUp8(static_cast<uint64_t>(-stack_low));
  uint32_t base = 0;
  if (frame > 0) {
    if (options.stack_offset) {
      base = *options.stack_offset;
    } else if (user_unbounded) {
      diags->Error(iterator, fmt::format(
                                 "the iterator indexes the scratch pad with an unbounded index "
                                 "and clang also keeps {} bytes of local variables on the stack: "
                                 "say where the stack may go in the scratch pad "
                                 "(CompileOptions::stack_offset, pulse compile --stack-offset)",
                                 frame));
      return false;
    } else {
      base = RoundUp8(user_extent);
    }
    if (uint64_t{base} + frame > options.scratch_pad_bytes) {
      diags->Error(iterator, fmt::format("the {} bytes of stack clang uses do not fit in the "
                                         "{}-byte scratch pad at offset {}",
                                         frame, options.scratch_pad_bytes, base));
      return false;
    }
    for (auto* fn : {&end_code, &next_code}) {
      for (auto& e : *fn) {
        if (e.stack_a) e.insn.a.value += base + frame;
        if (e.stack_b) e.insn.b.value += base + frame;
      }
    }
  }
  out->stack_offset = frame > 0 ? base : 0;
  out->stack_bytes = frame;

  // 2. Layout: LOAD; end(); [RETURN]; next().
  const bool needs_return =
      std::any_of(end_code.begin(), end_code.end(),
                  [](const Emitted& e) { return e.target == Target::kEndReturn; });
  const int end_base = 1;
  const int return_index = end_base + static_cast<int>(end_code.size());
  const int next_base = return_index + (needs_return ? 1 : 0);
  std::vector<LinkedInsn> code;
  LinkedInsn load;
  load.insn.op = Opcode::kLoad;
  load.insn.a = Operand::Imm(0);
  code.push_back(load);
  auto append = [&](const std::vector<Emitted>& fn, int function, int fn_base) {
    for (const auto& e : fn) {
      LinkedInsn l;
      l.insn = e.insn;
      l.function = function;
      l.bpf_slot = e.bpf_slot;
      l.data_extent = e.data_extent;
      switch (e.target) {
        case Target::kIndex: l.insn.a = Operand::Imm(fn_base + e.insn.a.value); break;
        case Target::kEndReturn: l.insn.a = Operand::Imm(return_index); break;
        case Target::kNextStart: l.insn.a = Operand::Imm(next_base); break;
        case Target::kNone: break;
      }
      code.push_back(l);
    }
  };
  append(end_code, 0, end_base);
  if (needs_return) {
    LinkedInsn r;
    r.insn.op = Opcode::kReturn;
    code.push_back(r);
  }
  append(next_code, 1, next_base);

  // 3. Optimize, with the stack's zeroing unless that makes the iteration
  // too long (a frame of many slots and many terminals).
  std::vector<LinkedInsn> uncleared;
  if (frame > 0) {
    uncleared = code;
    ClearStackAtTerminals(base, frame, &code);
  }
  if (options.optimize) Optimize(&code);
  out->stack_cleared = frame > 0;
  if (frame > 0 && code.size() > options.max_instructions) {
    code = std::move(uncleared);
    if (options.optimize) Optimize(&code);
    out->stack_cleared = false;
  }

  // 4. The window: every byte of the node the remaining code may read.
  uint32_t window = 0;
  for (const auto& l : code) {
    for (const Operand* o : {&l.insn.a, &l.insn.b}) {
      if (o->kind == OperandKind::kData)
        window = std::max<uint32_t>(window, static_cast<uint32_t>(o->value + l.insn.width));
      if (o->kind == OperandKind::kDataIdx) window = std::max(window, l.data_extent);
    }
  }
  code[0].insn.a = Operand::Imm(window);
  out->window_bytes = window;
  out->code = std::move(code);
  return true;
}

}  // namespace pulse::compiler
