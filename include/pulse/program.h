// Programs: the binary encoding of pulse ISA instruction sequences, and the
// verified, immutable form that engines execute.
//
// Binary encoding, versions 1 and 2 (little-endian):
//   header (16 bytes): magic "PULS", u16 version, u16 flags = 0,
//                      u32 instruction count, u32 reserved = 0
//   instructions (24 bytes each): u8 opcode, u8 width, u8 a.kind, u8 a.reg,
//                      u8 b.kind, u8 b.reg, u16 reserved = 0,
//                      i64 a.value, i64 b.value
// Decoding checks every field (magic, version, reserved bytes, opcode,
// operand kinds, register numbers) and names the first bad one.  Version 2
// adds PREFETCH and nothing else; the encoder writes version 1 for a program
// without PREFETCH, so those programs keep their bytes and hashes and older
// builds still read them.  A version-1 program holding PREFETCH is refused,
// and so is a version-2 program without one: each program has exactly one
// encoding (its hash names it), the lowest version that holds it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pulse/isa.h"
#include "pulse/status.h"

namespace pulse {

inline constexpr uint16_t kProgramEncodingVersion = 2;  // the newest this build reads
inline constexpr size_t kProgramHeaderBytes = 16;
inline constexpr size_t kInstructionBytes = 24;

// Serializes instructions.  Never fails: any Instruction value encodes
// (validity is the verifier's job, not the encoder's).
std::vector<uint8_t> EncodeProgram(std::span<const isa::Instruction> insns);

// Parses an encoded program.  Returns InvalidArgument naming the offending
// byte offset / instruction index and field on malformed input.
Result<std::vector<isa::Instruction>> DecodeProgram(std::span<const uint8_t> bytes);

// What the verifier learned about a program; everything the dispatch engine
// and the memory-node engine need to plan its execution.
struct ProgramInfo {
  uint32_t window_bytes = 0;   // bytes LOADed from cur_ptr at each iteration
  uint32_t scratch_bytes = 0;  // smallest scratch pad the static accesses fit
  uint32_t longest_path = 0;   // instructions on the longest path through one
                               // iteration, LOAD and terminal included (N in
                               // t_c = t_i * N)
  bool has_store = false;      // writes far memory: retries must not repeat it
  bool has_alloc = false;
  bool has_indexed = false;    // register-indexed operands (checked at run time)
};

struct VerifierOptions {
  uint32_t scratch_pad_bytes = isa::kDefaultScratchPadBytes;  // static sp accesses must fit
  uint32_t max_instructions = isa::kDefaultMaxInstructions;
};

// Checks a program and computes its ProgramInfo.  On rejection returns
// InvalidArgument whose message starts with "instruction <i> (<mnemonic>): "
// and says why (backward jump, jump out of the program, operand outside the
// window or scratch pad, register read before it is written, a path that
// reaches the end without NEXT_ITER or RETURN, too many instructions, ...).
Result<ProgramInfo> VerifyProgram(std::span<const isa::Instruction> insns,
                                  const VerifierOptions& options = {});

// An immutable program that passed the verifier.  Engines only ever execute
// these.  Thread-safe (immutable); share it with std::shared_ptr.
class VerifiedProgram {
 public:
  // Verifies and wraps insns.  Errors as VerifyProgram.
  static Result<std::shared_ptr<const VerifiedProgram>> Create(
      std::vector<isa::Instruction> insns, const VerifierOptions& options = {});
  // Decodes then verifies.  Errors as DecodeProgram / VerifyProgram.
  static Result<std::shared_ptr<const VerifiedProgram>> FromBytes(
      std::span<const uint8_t> bytes, const VerifierOptions& options = {});

  const std::vector<isa::Instruction>& instructions() const { return insns_; }
  const ProgramInfo& info() const { return info_; }
  // The binary encoding and its 64-bit content hash (XXH64, seed 0): the key
  // under which memory nodes cache programs.
  const std::vector<uint8_t>& encoded() const { return encoded_; }
  uint64_t hash() const { return hash_; }

 private:
  VerifiedProgram() = default;
  std::vector<isa::Instruction> insns_;
  ProgramInfo info_;
  std::vector<uint8_t> encoded_;
  uint64_t hash_ = 0;
};

using ProgramRef = std::shared_ptr<const VerifiedProgram>;

}  // namespace pulse
