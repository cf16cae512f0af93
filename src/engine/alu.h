// The arithmetic of the pulse ISA, shared by the reference interpreter and
// the engine so there is one definition of what each operation computes.
// Width rules are those of include/pulse/isa.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "pulse/isa.h"

namespace pulse::alu {

inline uint64_t Truncate(uint64_t v, unsigned width) {
  return width == 8 ? v : v & ((uint64_t{1} << (width * 8)) - 1);
}

inline int64_t SignExtend(uint64_t v, unsigned width) {
  const unsigned shift = 64 - width * 8;
  return static_cast<int64_t>(v << shift) >> shift;
}

// Little-endian load/store of `width` bytes.
inline uint64_t LoadBytes(const uint8_t* p, unsigned width) {
  switch (width) {
    case 1: return *p;
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

inline void StoreBytes(uint8_t* p, uint64_t v, unsigned width) {
  switch (width) {
    case 1: *p = static_cast<uint8_t>(v); break;
    case 2: { uint16_t x = static_cast<uint16_t>(v); std::memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
    default: std::memcpy(p, &v, 8); break;
  }
}

// Computes `a op b` at `width` (operands already truncated to width).
// Returns false on division or remainder by zero.
inline bool Compute(isa::Opcode op, unsigned width, uint64_t a, uint64_t b, uint64_t* out) {
  using isa::Opcode;
  const unsigned bits = width * 8;
  uint64_t r = 0;
  switch (op) {
    case Opcode::kAdd: r = a + b; break;
    case Opcode::kSub: r = a - b; break;
    case Opcode::kMul: r = a * b; break;
    case Opcode::kDiv:
      if (b == 0) return false;
      r = a / b;
      break;
    case Opcode::kMod:
      if (b == 0) return false;
      r = a % b;
      break;
    case Opcode::kSdiv:
    case Opcode::kSmod: {
      if (b == 0) return false;
      const int64_t sa = SignExtend(a, width), sb = SignExtend(b, width);
      // INT_MIN / -1 overflows; define it as wrapping (quotient INT_MIN, remainder 0).
      if (sb == -1) {
        r = op == Opcode::kSdiv ? static_cast<uint64_t>(0) - static_cast<uint64_t>(sa) : 0;
      } else {
        r = static_cast<uint64_t>(op == Opcode::kSdiv ? sa / sb : sa % sb);
      }
      break;
    }
    case Opcode::kAnd: r = a & b; break;
    case Opcode::kOr: r = a | b; break;
    case Opcode::kXor: r = a ^ b; break;
    case Opcode::kNot: r = ~a; break;
    case Opcode::kNeg: r = static_cast<uint64_t>(0) - a; break;
    case Opcode::kShl: r = a << (b % bits); break;
    case Opcode::kShr: r = a >> (b % bits); break;
    case Opcode::kSar: r = static_cast<uint64_t>(SignExtend(a, width) >> (b % bits)); break;
    case Opcode::kMove: r = b; break;
    default: r = 0; break;
  }
  *out = Truncate(r, width);
  return true;
}

// Whether a conditional jump is taken after COMPARE lhs, rhs at cmp_width.
inline bool JumpTaken(isa::Opcode op, uint64_t lhs, uint64_t rhs, unsigned cmp_width) {
  using isa::Opcode;
  const int64_t sl = SignExtend(lhs, cmp_width), sr = SignExtend(rhs, cmp_width);
  switch (op) {
    case Opcode::kJump: return true;
    case Opcode::kJumpEq: return lhs == rhs;
    case Opcode::kJumpNe: return lhs != rhs;
    case Opcode::kJumpLt: return sl < sr;
    case Opcode::kJumpGt: return sl > sr;
    case Opcode::kJumpLe: return sl <= sr;
    case Opcode::kJumpGe: return sl >= sr;
    case Opcode::kJumpLtu: return lhs < rhs;
    case Opcode::kJumpGtu: return lhs > rhs;
    case Opcode::kJumpLeu: return lhs <= rhs;
    case Opcode::kJumpGeu: return lhs >= rhs;
    case Opcode::kJumpSet: return (lhs & rhs) != 0;
    default: return false;
  }
}

}  // namespace pulse::alu
