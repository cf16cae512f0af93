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
inline constexpr uint8_t kBpfLd = 0x00;
inline constexpr uint8_t kBpfLdx = 0x01;
inline constexpr uint8_t kBpfSt = 0x02;
inline constexpr uint8_t kBpfStx = 0x03;
inline constexpr uint8_t kBpfAlu = 0x04;    // 32-bit ALU
inline constexpr uint8_t kBpfJmp = 0x05;    // 64-bit compares
inline constexpr uint8_t kBpfJmp32 = 0x06;  // 32-bit compares (cpu v3)
inline constexpr uint8_t kBpfAlu64 = 0x07;

// ALU operations (code & 0xf0).
inline constexpr uint8_t kBpfAdd = 0x00;
inline constexpr uint8_t kBpfSub = 0x10;
inline constexpr uint8_t kBpfMul = 0x20;
inline constexpr uint8_t kBpfDiv = 0x30;
inline constexpr uint8_t kBpfOr = 0x40;
inline constexpr uint8_t kBpfAnd = 0x50;
inline constexpr uint8_t kBpfLsh = 0x60;
inline constexpr uint8_t kBpfRsh = 0x70;
inline constexpr uint8_t kBpfNeg = 0x80;
inline constexpr uint8_t kBpfMod = 0x90;
inline constexpr uint8_t kBpfXor = 0xa0;
inline constexpr uint8_t kBpfMov = 0xb0;
inline constexpr uint8_t kBpfArsh = 0xc0;
inline constexpr uint8_t kBpfEnd = 0xd0;

// Jump operations (code & 0xf0).
inline constexpr uint8_t kBpfJa = 0x00;
inline constexpr uint8_t kBpfJeq = 0x10;
inline constexpr uint8_t kBpfJgt = 0x20;
inline constexpr uint8_t kBpfJge = 0x30;
inline constexpr uint8_t kBpfJset = 0x40;
inline constexpr uint8_t kBpfJne = 0x50;
inline constexpr uint8_t kBpfJsgt = 0x60;
inline constexpr uint8_t kBpfJsge = 0x70;
inline constexpr uint8_t kBpfCall = 0x80;
inline constexpr uint8_t kBpfExit = 0x90;
// The one helper an iterator may call: PULSE_PREFETCH (pulse/iterator.h)
// compiles to `call kPulseHelperPrefetch` with the far address in r1, and the
// translator turns it into PREFETCH.  Outside the kernel's helper numbers.
inline constexpr int32_t kPulseHelperPrefetch = 0x50550001;
inline constexpr uint8_t kBpfJlt = 0xa0;
inline constexpr uint8_t kBpfJle = 0xb0;
inline constexpr uint8_t kBpfJslt = 0xc0;
inline constexpr uint8_t kBpfJsle = 0xd0;

// Source operand (code & 0x08) for ALU and JMP.
inline constexpr uint8_t kBpfSrcK = 0x00;  // immediate
inline constexpr uint8_t kBpfSrcX = 0x08;  // register

// Load/store size (code & 0x18) and mode (code & 0xe0).
inline constexpr uint8_t kBpfW = 0x00;
inline constexpr uint8_t kBpfH = 0x08;
inline constexpr uint8_t kBpfB = 0x10;
inline constexpr uint8_t kBpfDw = 0x18;

inline constexpr uint8_t kBpfImm = 0x00;
inline constexpr uint8_t kBpfAbs = 0x20;
inline constexpr uint8_t kBpfInd = 0x40;
inline constexpr uint8_t kBpfMem = 0x60;
inline constexpr uint8_t kBpfMemsx = 0x80;
inline constexpr uint8_t kBpfAtomic = 0xc0;

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
