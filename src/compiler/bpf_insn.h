// BPF instructions as clang's BPF backend emits them into an ELF object:
// decoding of the 8-byte slots (with the two-slot ld_imm64 form) and a short
// text form for diagnostics.  Internal to the iterator compiler.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pulse::compiler {

// Instruction classes (code & 0x07).
enum BpfClass : uint8_t {
  kBpfLd = 0x00,
  kBpfLdx = 0x01,
  kBpfSt = 0x02,
  kBpfStx = 0x03,
  kBpfAlu = 0x04,    // 32-bit ALU
  kBpfJmp = 0x05,    // 64-bit compares
  kBpfJmp32 = 0x06,  // 32-bit compares (cpu v3)
  kBpfAlu64 = 0x07,
};

// ALU operations (code & 0xf0).
enum BpfAluOp : uint8_t {
  kBpfAdd = 0x00, kBpfSub = 0x10, kBpfMul = 0x20, kBpfDiv = 0x30,
  kBpfOr = 0x40,  kBpfAnd = 0x50, kBpfLsh = 0x60, kBpfRsh = 0x70,
  kBpfNeg = 0x80, kBpfMod = 0x90, kBpfXor = 0xa0, kBpfMov = 0xb0,
  kBpfArsh = 0xc0, kBpfEnd = 0xd0,
};

// Jump operations (code & 0xf0).
enum BpfJmpOp : uint8_t {
  kBpfJa = 0x00,   kBpfJeq = 0x10,  kBpfJgt = 0x20,  kBpfJge = 0x30,
  kBpfJset = 0x40, kBpfJne = 0x50,  kBpfJsgt = 0x60, kBpfJsge = 0x70,
  kBpfCall = 0x80, kBpfExit = 0x90, kBpfJlt = 0xa0,  kBpfJle = 0xb0,
  kBpfJslt = 0xc0, kBpfJsle = 0xd0,
};

// Source operand (code & 0x08) for ALU and JMP.
inline constexpr uint8_t kBpfSrcK = 0x00;  // immediate
inline constexpr uint8_t kBpfSrcX = 0x08;  // register

// Load/store size (code & 0x18) and mode (code & 0xe0).
enum BpfSize : uint8_t { kBpfW = 0x00, kBpfH = 0x08, kBpfB = 0x10, kBpfDw = 0x18 };
enum BpfMode : uint8_t {
  kBpfImm = 0x00, kBpfAbs = 0x20, kBpfInd = 0x40, kBpfMem = 0x60,
  kBpfMemsx = 0x80, kBpfAtomic = 0xc0,
};

inline constexpr int kBpfFramePointer = 10;   // r10, read-only
inline constexpr int kBpfNumRegisters = 11;   // r0..r10
inline constexpr int kBpfStackBytes = 512;    // the BPF stack limit

// One decoded instruction.  For ld_imm64 (code 0x18) `imm64` holds the full
// constant and the instruction occupies two slots (`slots` == 2).
struct BpfInsn {
  uint8_t code = 0;
  uint8_t dst = 0;
  uint8_t src = 0;
  int16_t off = 0;
  int32_t imm = 0;
  int64_t imm64 = 0;
  int slots = 1;

  uint8_t cls() const { return code & 0x07; }
  uint8_t op() const { return code & 0xf0; }
  bool src_is_reg() const { return (code & 0x08) != 0; }
  uint8_t size() const { return code & 0x18; }
  uint8_t mode() const { return code & 0xe0; }
  bool is_alu() const { return cls() == kBpfAlu || cls() == kBpfAlu64; }
  bool is_jmp() const { return cls() == kBpfJmp || cls() == kBpfJmp32; }
  bool is_ld_imm64() const { return code == (kBpfLd | kBpfImm | kBpfDw); }
  bool is_exit() const { return cls() == kBpfJmp && op() == kBpfExit; }
  bool is_call() const { return cls() == kBpfJmp && op() == kBpfCall; }
  // A jump with a target (JA or conditional), not CALL/EXIT.
  bool is_branch() const { return is_jmp() && op() != kBpfCall && op() != kBpfExit; }
};

// Bytes moved by a load/store of the given size field (1, 2, 4, 8).
int BpfSizeBytes(uint8_t size);

// Decodes a section's bytes into slot-indexed instructions: result[i] is the
// instruction starting at slot i; the second slot of an ld_imm64 is left as a
// default BpfInsn with slots == 0.  Fails (returns false, sets *error) if the
// size is not a multiple of 8 or an ld_imm64 is truncated.
bool DecodeBpf(std::span<const uint8_t> bytes, std::vector<BpfInsn>* out, std::string* error);

// A one-line text form close to llvm-objdump's, e.g. "r2 = *(u64 *)(r1 + 8)",
// "if r3 != r2 goto +3", "w0 = 1", "call 5", "exit".
std::string BpfToString(const BpfInsn& insn);

}  // namespace pulse::compiler
