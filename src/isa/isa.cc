#include "pulse/isa.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace pulse::isa {
namespace {

struct OpcodeEntry {
  Opcode op;
  std::string_view name;
};

constexpr std::array kOpcodes = {
    OpcodeEntry{Opcode::kLoad, "LOAD"},        OpcodeEntry{Opcode::kStore, "STORE"},
    OpcodeEntry{Opcode::kAdd, "ADD"},          OpcodeEntry{Opcode::kSub, "SUB"},
    OpcodeEntry{Opcode::kMul, "MUL"},          OpcodeEntry{Opcode::kDiv, "DIV"},
    OpcodeEntry{Opcode::kSdiv, "SDIV"},        OpcodeEntry{Opcode::kMod, "MOD"},
    OpcodeEntry{Opcode::kSmod, "SMOD"},        OpcodeEntry{Opcode::kAnd, "AND"},
    OpcodeEntry{Opcode::kOr, "OR"},            OpcodeEntry{Opcode::kXor, "XOR"},
    OpcodeEntry{Opcode::kNot, "NOT"},          OpcodeEntry{Opcode::kNeg, "NEG"},
    OpcodeEntry{Opcode::kShl, "SHL"},          OpcodeEntry{Opcode::kShr, "SHR"},
    OpcodeEntry{Opcode::kSar, "SAR"},          OpcodeEntry{Opcode::kMove, "MOVE"},
    OpcodeEntry{Opcode::kCompare, "COMPARE"},  OpcodeEntry{Opcode::kJump, "JUMP"},
    OpcodeEntry{Opcode::kJumpEq, "JUMP_EQ"},   OpcodeEntry{Opcode::kJumpNe, "JUMP_NE"},
    OpcodeEntry{Opcode::kJumpLt, "JUMP_LT"},   OpcodeEntry{Opcode::kJumpGt, "JUMP_GT"},
    OpcodeEntry{Opcode::kJumpLe, "JUMP_LE"},   OpcodeEntry{Opcode::kJumpGe, "JUMP_GE"},
    OpcodeEntry{Opcode::kJumpLtu, "JUMP_LTU"}, OpcodeEntry{Opcode::kJumpGtu, "JUMP_GTU"},
    OpcodeEntry{Opcode::kJumpLeu, "JUMP_LEU"}, OpcodeEntry{Opcode::kJumpGeu, "JUMP_GEU"},
    OpcodeEntry{Opcode::kJumpSet, "JUMP_SET"}, OpcodeEntry{Opcode::kAlloc, "ALLOC"},
    OpcodeEntry{Opcode::kPrefetch, "PREFETCH"},
    OpcodeEntry{Opcode::kNextIter, "NEXT_ITER"}, OpcodeEntry{Opcode::kReturn, "RETURN"},
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

}  // namespace

bool IsAlu(Opcode op) { return op >= Opcode::kAdd && op <= Opcode::kSar; }
bool IsUnaryAlu(Opcode op) { return op == Opcode::kNot || op == Opcode::kNeg; }
bool IsJump(Opcode op) { return op >= Opcode::kJump && op <= Opcode::kJumpSet; }
bool IsConditionalJump(Opcode op) { return op >= Opcode::kJumpEq && op <= Opcode::kJumpSet; }
bool IsTerminal(Opcode op) { return op == Opcode::kNextIter || op == Opcode::kReturn; }
bool IsMemoryOperand(OperandKind k) {
  return k == OperandKind::kSp || k == OperandKind::kSpIdx || k == OperandKind::kData ||
         k == OperandKind::kDataIdx || k == OperandKind::kMem;
}

std::string_view OpcodeName(Opcode op) {
  for (const auto& e : kOpcodes)
    if (e.op == op) return e.name;
  return "<invalid>";
}

std::optional<Opcode> OpcodeFromName(std::string_view name) {
  if (EqualsIgnoreCase(name, "MV")) return Opcode::kMove;
  if (EqualsIgnoreCase(name, "JUMP_NEQ")) return Opcode::kJumpNe;
  for (const auto& e : kOpcodes)
    if (EqualsIgnoreCase(e.name, name)) return e.op;
  return std::nullopt;
}

bool IsValidOpcode(uint8_t byte) {
  for (const auto& e : kOpcodes)
    if (static_cast<uint8_t>(e.op) == byte) return true;
  return false;
}

}  // namespace pulse::isa
