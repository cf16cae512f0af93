// The text form of pulse programs: an assembler and a disassembler.
//
// Syntax (close to seed 001 Listing 4), one instruction per line:
//
//   ; comment            (also "//" and "#" to end of line, and /* ... */)
//   .equ KEY_NOT_FOUND 0xffffffff     named constant, usable as an immediate
//   Iter_Start:                       label (may share a line with an instruction)
//     LOAD data                       window computed by the verifier
//     LOAD data, 64                   ... or declared explicitly
//     COMPARE sp[0], data[0]          commas between operands are optional
//     JUMP_EQ Return_success
//     MOVE cur_ptr, data[40]
//     MOVE.4 sp[8], KEY_NOT_FOUND     .1 .2 .4 .8 set the width (default 8)
//     STORE [r3+16], r2
//     ADD r1, sp[r2+8]                register-indexed scratch pad / data
//     ALLOC r4, sp[64]
//     NEXT_ITER
//     RETURN
//
// Mnemonics are case-insensitive; MV is an alias of MOVE and JUMP_NEQ of
// JUMP_NE; scratch_pad[...] is an alias of sp[...].  Immediates are decimal,
// 0x-hex or negative decimal.  Jump targets are labels or "@<index>".
//
// The disassembler prints the canonical form (upper-case mnemonics, commas,
// labels "L<index>" on jump targets), and
// Assemble(Disassemble(p)) == p for every program p that Disassemble accepts.
// All functions are thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pulse/isa.h"
#include "pulse/status.h"

namespace pulse {

// Parses assembly text.  On error returns InvalidArgument with
// "line <n>: <what is wrong>" (unknown mnemonic, bad operand, undefined or
// duplicate label, wrong operand count, immediate out of range, ...).
// Does not verify the program: call VerifyProgram for that.
Result<std::vector<isa::Instruction>> Assemble(std::string_view text);

// Prints instructions as canonical assembly text.  Instructions that have no
// text form (an operand kind an opcode does not take) are printed as a
// comment-marked "<invalid ...>" line, so the result always reads.
std::string Disassemble(std::span<const isa::Instruction> insns);

}  // namespace pulse
