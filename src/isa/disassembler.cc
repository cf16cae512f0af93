// The disassembler: instructions -> canonical assembly text.
//
// The text must assemble back to the very same instructions, so an
// instruction is printed only if every one of its fields shows in the text:
// the operand kinds must be ones its opcode takes (the shapes the assembler
// parses) and the fields those kinds leave unused must be zero.  Anything
// else becomes a comment line.

#include <cstdint>
#include <set>
#include <string>

#include <fmt/format.h>

#include "pulse/assembler.h"

namespace pulse {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Operand;
using isa::OperandKind;

bool ValidRegister(uint8_t r) { return r < isa::kNumRegisters; }

// True if the text form of o carries every field of o.
bool IsPrintable(const Operand& o) {
  switch (o.kind) {
    case OperandKind::kNone:
    case OperandKind::kCurPtr:
      return o.reg == 0 && o.value == 0;
    case OperandKind::kReg:
      return ValidRegister(o.reg) && o.value == 0;
    case OperandKind::kImm:
    case OperandKind::kSp:
    case OperandKind::kData:
      return o.reg == 0;
    case OperandKind::kSpIdx:
    case OperandKind::kDataIdx:
    case OperandKind::kMem:
      return ValidRegister(o.reg);
  }
  return false;  // a kind value outside the enum
}

// Mirrors the assembler: far memory is only a STORE destination, and
// immediates are never destinations.
bool IsSource(const Operand& o) { return o.kind != OperandKind::kNone && o.kind != OperandKind::kMem; }
bool IsDestination(const Operand& o) { return IsSource(o) && o.kind != OperandKind::kImm; }
bool IsNone(const Operand& o) { return o.kind == OperandKind::kNone; }

// True if in has a text form that assembles back to exactly in.
bool HasTextForm(const Instruction& in) {
  if (in.width != 1 && in.width != 2 && in.width != 4 && in.width != 8) return false;
  if (!isa::IsValidOpcode(static_cast<uint8_t>(in.op))) return false;
  if (!IsPrintable(in.a) || !IsPrintable(in.b)) return false;
  const Opcode op = in.op;
  if (op == Opcode::kLoad) return (IsNone(in.a) || in.a.kind == OperandKind::kImm) && IsNone(in.b);
  if (op == Opcode::kStore) return in.a.kind == OperandKind::kMem && IsSource(in.b);
  if (isa::IsUnaryAlu(op)) return IsDestination(in.a) && IsNone(in.b);
  if (isa::IsAlu(op) || op == Opcode::kMove) return IsDestination(in.a) && IsSource(in.b);
  if (op == Opcode::kCompare) return IsSource(in.a) && IsSource(in.b);
  if (isa::IsJump(op)) return in.a.kind == OperandKind::kImm && IsNone(in.b);
  if (op == Opcode::kAlloc) return in.a.kind == OperandKind::kReg && in.b.kind == OperandKind::kSp;
  if (op == Opcode::kPrefetch) return in.a.kind == OperandKind::kMem && IsNone(in.b);
  return IsNone(in.a) && IsNone(in.b);  // NEXT_ITER, RETURN
}

// "r2", "r2+8", "r2-8"; the magnitude is computed unsigned so INT64_MIN prints.
std::string IndexedAddress(uint8_t reg, int64_t offset) {
  if (offset > 0) return fmt::format("r{}+{}", reg, offset);
  if (offset < 0) return fmt::format("r{}-{}", reg, uint64_t{0} - static_cast<uint64_t>(offset));
  return fmt::format("r{}", reg);
}

std::string OperandText(const Operand& o) {
  switch (o.kind) {
    case OperandKind::kNone: return "";
    case OperandKind::kReg: return fmt::format("r{}", o.reg);
    case OperandKind::kImm: return std::to_string(o.value);
    case OperandKind::kCurPtr: return "cur_ptr";
    case OperandKind::kSp: return fmt::format("sp[{}]", o.value);
    case OperandKind::kSpIdx: return fmt::format("sp[{}]", IndexedAddress(o.reg, o.value));
    case OperandKind::kData: return fmt::format("data[{}]", o.value);
    case OperandKind::kDataIdx: return fmt::format("data[{}]", IndexedAddress(o.reg, o.value));
    case OperandKind::kMem: return fmt::format("[{}]", IndexedAddress(o.reg, o.value));
  }
  return "?";
}

// Targets inside the program get labels; anything else (one past the end,
// out of range, negative) keeps its raw index so the text still round-trips.
bool TargetHasLabel(int64_t target, size_t count) {
  return target >= 0 && static_cast<uint64_t>(target) < count;
}

std::string JumpTargetText(int64_t target, size_t count) {
  return TargetHasLabel(target, count) ? fmt::format("L{}", target) : fmt::format("@{}", target);
}

std::string OperandDump(const Operand& o) {
  return fmt::format("{{kind {}, reg {}, value {}}}", static_cast<unsigned>(o.kind), o.reg,
                     o.value);
}

// A line that says what the instruction held; a comment, so the text reads.
std::string InvalidLine(const Instruction& in) {
  return fmt::format("; <invalid instruction: opcode {} ({}), width {}, a {}, b {}>",
                     static_cast<unsigned>(in.op), isa::OpcodeName(in.op), in.width,
                     OperandDump(in.a), OperandDump(in.b));
}

std::string InstructionText(const Instruction& in, size_t count) {
  std::string s(isa::OpcodeName(in.op));
  if (in.width != 8) s += fmt::format(".{}", in.width);
  if (in.op == Opcode::kLoad) {
    s += " data";
    if (!IsNone(in.a)) s += ", " + OperandText(in.a);
    return s;
  }
  if (isa::IsJump(in.op)) return fmt::format("{} {}", s, JumpTargetText(in.a.value, count));
  if (!IsNone(in.a)) s += fmt::format(" {}", OperandText(in.a));
  if (!IsNone(in.b)) s += fmt::format(", {}", OperandText(in.b));
  return s;
}

}  // namespace

std::string Disassemble(std::span<const isa::Instruction> insns) {
  std::set<int64_t> targets;
  for (const Instruction& in : insns) {
    if (isa::IsJump(in.op) && HasTextForm(in) && TargetHasLabel(in.a.value, insns.size()))
      targets.insert(in.a.value);
  }
  std::string out;
  for (size_t i = 0; i < insns.size(); ++i) {
    if (targets.count(static_cast<int64_t>(i))) out += fmt::format("L{}:\n", i);
    out += "  ";
    out += HasTextForm(insns[i]) ? InstructionText(insns[i], insns.size()) : InvalidLine(insns[i]);
    out += '\n';
  }
  return out;
}

}  // namespace pulse
