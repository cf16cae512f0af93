// The pulse instruction set (seed 001 Table 1 and Listing 4; seed 000 4.1).
//
// A program is the body of one iteration of an iterator: it starts with a
// LOAD of the data window at cur_ptr, computes, and ends every path in
// NEXT_ITER (cur_ptr was updated; run the program again on the new node) or
// RETURN (the traversal is done; the scratch pad is the answer).  Jumps only
// go forward, so one iteration is bounded by the program length.
//
// Instructions are two-operand, "dst op= src", like BPF and Listing 4:
//   ADD r1, sp[8]      r1 = r1 + scratch_pad[8..16)
//   MOVE cur_ptr, data[40]
//   COMPARE sp[0], data[0]   then   JUMP_EQ label
//
// Width.  Every instruction has a width of 1, 2, 4 or 8 bytes (default 8).
// Memory operands (sp, data, far memory) are accessed at that width.  The
// operation reads its operands at that width (registers are truncated),
// zero-extended; signed operations (SDIV, SMOD, SAR, signed jumps)
// sign-extend from the width.  The result is truncated to the width; a
// register destination receives it zero-extended (as BPF's 32-bit ops do).
//
// Operands (OperandKind):
//   rN            one of kNumRegisters 64-bit registers
//   imm           a 64-bit immediate
//   cur_ptr       the iterator's current pointer (a far address)
//   sp[off]       scratch pad bytes at a constant offset
//   sp[rN+off]    scratch pad, register-indexed; bounds-checked at run time
//   data[off]     the data window loaded from cur_ptr at iteration start
//   data[rN+off]  data window, register-indexed; bounds-checked at run time
//   [rN+off]      far memory at address rN+off (STORE destination only)
//
// The data window is a snapshot taken by the iteration's LOAD: a STORE in the
// same iteration does not change what data[] reads.
//
// This header has no state; everything in it is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pulse::isa {

inline constexpr int kNumRegisters = 16;
inline constexpr uint32_t kMaxWindowBytes = 256;          // one LOAD per iteration
inline constexpr uint32_t kDefaultScratchPadBytes = 4096; // CHASE 3.1
inline constexpr uint32_t kDefaultMaxInstructions = 1024; // verifier's program length limit

// Stable numeric values: they are the binary encoding.  Never renumber.
enum class Opcode : uint8_t {
  kLoad = 0x01,     // LOAD data [, window_bytes]   must be instruction 0
  kStore = 0x02,    // STORE [rN+off], src          far-memory write
  kAdd = 0x10,
  kSub = 0x11,
  kMul = 0x12,
  kDiv = 0x13,      // unsigned; division by zero faults
  kSdiv = 0x14,     // signed; division by zero faults
  kMod = 0x15,      // unsigned remainder; by zero faults
  kSmod = 0x16,     // signed remainder; by zero faults
  kAnd = 0x17,
  kOr = 0x18,
  kXor = 0x19,
  kNot = 0x1A,      // NOT dst      (one operand)
  kNeg = 0x1B,      // NEG dst      (one operand)
  kShl = 0x1C,      // shift count taken modulo the width in bits
  kShr = 0x1D,      // logical
  kSar = 0x1E,      // arithmetic
  kMove = 0x20,
  kCompare = 0x30,  // remembers both operands for the next conditional jump
  kJump = 0x31,     // unconditional, forward
  kJumpEq = 0x32,
  kJumpNe = 0x33,
  kJumpLt = 0x34,   // signed
  kJumpGt = 0x35,
  kJumpLe = 0x36,
  kJumpGe = 0x37,
  kJumpLtu = 0x38,  // unsigned
  kJumpGtu = 0x39,
  kJumpLeu = 0x3A,
  kJumpGeu = 0x3B,
  kJumpSet = 0x3C,  // taken if (lhs & rhs) != 0
  kAlloc = 0x40,    // ALLOC rN, sp[off]: pop a pre-allocated region (see below)
  kPrefetch = 0x41, // PREFETCH [rN+off]: a hint, see below
  kNextIter = 0x50,
  kReturn = 0x51,
};

// ALLOC (seed 000 C.2).  The caller pre-allocates regions and lists them in
// the scratch pad at off: a u64 count n followed by n u64 far addresses.
// ALLOC takes the last one (count becomes n-1) into the register.  With n == 0
// the traversal stops with TraversalStatus::kAllocExhausted; the caller adds
// regions and re-issues from the returned state, which re-runs the iteration.

// PREFETCH (a pulse extension, encoding version 2).  A hint that a later
// iteration will LOAD a window at rN+off: the engine may start bringing the
// program's window bytes from there toward the cache, so that several
// dependent loads the program already knows the addresses of (a leaf's value
// slots) overlap instead of each paying a miss in turn.  It has no effect on
// any result: it reads nothing the program can observe, never faults, and an
// address outside the caller's ranges at this memory node is ignored.  The
// reference interpreter treats it as a no-op.

enum class OperandKind : uint8_t {
  kNone = 0,
  kReg = 1,
  kImm = 2,
  kCurPtr = 3,
  kSp = 4,        // sp[off]
  kSpIdx = 5,     // sp[rN+off]
  kData = 6,      // data[off]
  kDataIdx = 7,   // data[rN+off]
  kMem = 8,       // [rN+off]
};

struct Operand {
  OperandKind kind = OperandKind::kNone;
  uint8_t reg = 0;    // kReg: the register; k*Idx and kMem: the index register
  int64_t value = 0;  // kImm: the immediate; memory kinds: the offset;
                      // jump instructions keep their target index here

  static Operand None() { return {}; }
  static Operand Reg(int r) { return {OperandKind::kReg, static_cast<uint8_t>(r), 0}; }
  static Operand Imm(int64_t v) { return {OperandKind::kImm, 0, v}; }
  static Operand CurPtr() { return {OperandKind::kCurPtr, 0, 0}; }
  static Operand Sp(int64_t off) { return {OperandKind::kSp, 0, off}; }
  static Operand SpIdx(int r, int64_t off) { return {OperandKind::kSpIdx, static_cast<uint8_t>(r), off}; }
  static Operand Data(int64_t off) { return {OperandKind::kData, 0, off}; }
  static Operand DataIdx(int r, int64_t off) { return {OperandKind::kDataIdx, static_cast<uint8_t>(r), off}; }
  static Operand Mem(int r, int64_t off) { return {OperandKind::kMem, static_cast<uint8_t>(r), off}; }

  bool operator==(const Operand&) const = default;
};

// One instruction.  Field use by opcode:
//   LOAD        a = Imm(window bytes) or None (window computed by the verifier)
//   ALU, MOVE   a = destination, b = source (NOT/NEG: a only)
//   STORE       a = Mem(rN, off), b = source
//   COMPARE     a = lhs, b = rhs
//   JUMP*       a = Imm(target instruction index)
//   ALLOC       a = Reg destination, b = Sp(table offset)
//   PREFETCH    a = Mem(rN, off)
//   NEXT_ITER, RETURN: no operands
struct Instruction {
  Opcode op = Opcode::kReturn;
  uint8_t width = 8;  // 1, 2, 4 or 8
  Operand a;
  Operand b;

  bool operator==(const Instruction&) const = default;
};

// Classification helpers.
bool IsAlu(Opcode op);            // ADD..SAR
bool IsUnaryAlu(Opcode op);       // NOT, NEG
bool IsJump(Opcode op);           // JUMP and every conditional jump
bool IsConditionalJump(Opcode op);
bool IsTerminal(Opcode op);       // NEXT_ITER, RETURN
bool IsMemoryOperand(OperandKind k);  // sp, data, far memory (width applies)

// Assembly mnemonic ("JUMP_EQ") and its inverse (case-insensitive; accepts the
// aliases MV and JUMP_NEQ).  OpcodeFromName returns nullopt for unknown names.
std::string_view OpcodeName(Opcode op);
std::optional<Opcode> OpcodeFromName(std::string_view name);
// True if byte is a defined opcode value.
bool IsValidOpcode(uint8_t byte);

}  // namespace pulse::isa
