// BPF ALU and jump operations -> pulse opcodes.  Internal.
#pragma once

#include <optional>

#include "compiler/bpf_insn.h"
#include "pulse/isa.h"

namespace pulse::compiler {

// The pulse opcode of a BPF ALU operation (code & 0xf0); nullopt if pulse has
// none (byte swaps).
inline std::optional<isa::Opcode> PulseAluOp(uint8_t op) {
  switch (op) {
    case kBpfAdd: return isa::Opcode::kAdd;
    case kBpfSub: return isa::Opcode::kSub;
    case kBpfMul: return isa::Opcode::kMul;
    case kBpfDiv: return isa::Opcode::kDiv;
    case kBpfOr: return isa::Opcode::kOr;
    case kBpfAnd: return isa::Opcode::kAnd;
    case kBpfLsh: return isa::Opcode::kShl;
    case kBpfRsh: return isa::Opcode::kShr;
    case kBpfNeg: return isa::Opcode::kNeg;
    case kBpfMod: return isa::Opcode::kMod;
    case kBpfXor: return isa::Opcode::kXor;
    case kBpfMov: return isa::Opcode::kMove;
    case kBpfArsh: return isa::Opcode::kSar;
    default: return std::nullopt;
  }
}

// The pulse conditional jump of a BPF jump operation; nullopt for JA, CALL,
// EXIT.
inline std::optional<isa::Opcode> PulseJumpOp(uint8_t op) {
  switch (op) {
    case kBpfJeq: return isa::Opcode::kJumpEq;
    case kBpfJne: return isa::Opcode::kJumpNe;
    case kBpfJgt: return isa::Opcode::kJumpGtu;
    case kBpfJge: return isa::Opcode::kJumpGeu;
    case kBpfJlt: return isa::Opcode::kJumpLtu;
    case kBpfJle: return isa::Opcode::kJumpLeu;
    case kBpfJsgt: return isa::Opcode::kJumpGt;
    case kBpfJsge: return isa::Opcode::kJumpGe;
    case kBpfJslt: return isa::Opcode::kJumpLt;
    case kBpfJsle: return isa::Opcode::kJumpLe;
    case kBpfJset: return isa::Opcode::kJumpSet;
    default: return std::nullopt;
  }
}

}  // namespace pulse::compiler
