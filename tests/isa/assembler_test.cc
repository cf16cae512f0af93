// Tests of the assembler, the disassembler and the binary program encoding.
//
// None of these depend on the verifier: Assemble and Disassemble work on
// any instruction sequence, verified or not.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pulse/assembler.h"
#include "pulse/isa.h"
#include "pulse/program.h"

namespace pulse::isa {

// Raw fields, so that failure messages do not depend on the disassembler
// under test.
void PrintTo(const Operand& o, std::ostream* os) {
  *os << "{kind " << static_cast<int>(o.kind) << ", r" << static_cast<int>(o.reg) << ", "
      << o.value << "}";
}

void PrintTo(const Instruction& in, std::ostream* os) {
  *os << OpcodeName(in.op) << "." << static_cast<int>(in.width) << " a=";
  PrintTo(in.a, os);
  *os << " b=";
  PrintTo(in.b, os);
}

}  // namespace pulse::isa

namespace pulse {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Operand;
using isa::OperandKind;

constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();

constexpr std::array kAllOpcodes = {
    Opcode::kLoad,    Opcode::kStore,   Opcode::kAdd,     Opcode::kSub,      Opcode::kMul,
    Opcode::kDiv,     Opcode::kSdiv,    Opcode::kMod,     Opcode::kSmod,     Opcode::kAnd,
    Opcode::kOr,      Opcode::kXor,     Opcode::kNot,     Opcode::kNeg,      Opcode::kShl,
    Opcode::kShr,     Opcode::kSar,     Opcode::kMove,    Opcode::kCompare,  Opcode::kJump,
    Opcode::kJumpEq,  Opcode::kJumpNe,  Opcode::kJumpLt,  Opcode::kJumpGt,   Opcode::kJumpLe,
    Opcode::kJumpGe,  Opcode::kJumpLtu, Opcode::kJumpGtu, Opcode::kJumpLeu,  Opcode::kJumpGeu,
    Opcode::kJumpSet, Opcode::kAlloc,   Opcode::kPrefetch, Opcode::kNextIter, Opcode::kReturn,
};

Instruction Insn(Opcode op, Operand a = Operand::None(), Operand b = Operand::None(),
                 uint8_t width = 8) {
  Instruction in;
  in.op = op;
  in.width = width;
  in.a = a;
  in.b = b;
  return in;
}

std::vector<Instruction> AssembleOk(std::string_view text) {
  Result<std::vector<Instruction>> r = Assemble(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString() << "\nin:\n" << text;
  return r.ok() ? *r : std::vector<Instruction>{};
}

// The single instruction that line assembles to.
Instruction One(std::string_view line) {
  std::vector<Instruction> p = AssembleOk(line);
  EXPECT_EQ(p.size(), 1u) << line;
  return p.size() == 1 ? p[0] : Insn(Opcode::kLoad, Operand::Imm(-12345));
}

std::string ErrorOf(std::string_view text) {
  Result<std::vector<Instruction>> r = Assemble(text);
  EXPECT_FALSE(r.ok()) << "assembled but should not have:\n" << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  return r.status().message();
}

// ---------------------------------------------------------------------------
// Opcodes

TEST(AssemblerOpcodes, EveryMnemonicParses) {
  struct Case {
    const char* text;
    Instruction want;
  };
  const Case cases[] = {
      {"LOAD data", Insn(Opcode::kLoad)},
      {"LOAD data, 64", Insn(Opcode::kLoad, Operand::Imm(64))},
      {"STORE [r3+16], r2", Insn(Opcode::kStore, Operand::Mem(3, 16), Operand::Reg(2))},
      {"ADD r1, sp[8]", Insn(Opcode::kAdd, Operand::Reg(1), Operand::Sp(8))},
      {"SUB r1, 5", Insn(Opcode::kSub, Operand::Reg(1), Operand::Imm(5))},
      {"MUL sp[0], r2", Insn(Opcode::kMul, Operand::Sp(0), Operand::Reg(2))},
      {"DIV r1, data[8]", Insn(Opcode::kDiv, Operand::Reg(1), Operand::Data(8))},
      {"SDIV r1, -3", Insn(Opcode::kSdiv, Operand::Reg(1), Operand::Imm(-3))},
      {"MOD r2, r3", Insn(Opcode::kMod, Operand::Reg(2), Operand::Reg(3))},
      {"SMOD r2, cur_ptr", Insn(Opcode::kSmod, Operand::Reg(2), Operand::CurPtr())},
      {"AND r4, 0xff", Insn(Opcode::kAnd, Operand::Reg(4), Operand::Imm(255))},
      {"OR sp[r1+8], r4", Insn(Opcode::kOr, Operand::SpIdx(1, 8), Operand::Reg(4))},
      {"XOR r5, data[r2+4]", Insn(Opcode::kXor, Operand::Reg(5), Operand::DataIdx(2, 4))},
      {"NOT r6", Insn(Opcode::kNot, Operand::Reg(6))},
      {"NEG sp[16]", Insn(Opcode::kNeg, Operand::Sp(16))},
      {"SHL r7, 3", Insn(Opcode::kShl, Operand::Reg(7), Operand::Imm(3))},
      {"SHR r7, r8", Insn(Opcode::kShr, Operand::Reg(7), Operand::Reg(8))},
      {"SAR r7, sp[24]", Insn(Opcode::kSar, Operand::Reg(7), Operand::Sp(24))},
      {"MOVE cur_ptr, data[40]", Insn(Opcode::kMove, Operand::CurPtr(), Operand::Data(40))},
      {"MV r1, r2", Insn(Opcode::kMove, Operand::Reg(1), Operand::Reg(2))},
      {"COMPARE sp[0], data[0]", Insn(Opcode::kCompare, Operand::Sp(0), Operand::Data(0))},
      {"COMPARE 0, data[40]", Insn(Opcode::kCompare, Operand::Imm(0), Operand::Data(40))},
      {"JUMP @0", Insn(Opcode::kJump, Operand::Imm(0))},
      {"JUMP_EQ @1", Insn(Opcode::kJumpEq, Operand::Imm(1))},
      {"JUMP_NE @2", Insn(Opcode::kJumpNe, Operand::Imm(2))},
      {"JUMP_NEQ @2", Insn(Opcode::kJumpNe, Operand::Imm(2))},
      {"JUMP_LT @3", Insn(Opcode::kJumpLt, Operand::Imm(3))},
      {"JUMP_GT @4", Insn(Opcode::kJumpGt, Operand::Imm(4))},
      {"JUMP_LE @5", Insn(Opcode::kJumpLe, Operand::Imm(5))},
      {"JUMP_GE @6", Insn(Opcode::kJumpGe, Operand::Imm(6))},
      {"JUMP_LTU @7", Insn(Opcode::kJumpLtu, Operand::Imm(7))},
      {"JUMP_GTU @8", Insn(Opcode::kJumpGtu, Operand::Imm(8))},
      {"JUMP_LEU @9", Insn(Opcode::kJumpLeu, Operand::Imm(9))},
      {"JUMP_GEU @10", Insn(Opcode::kJumpGeu, Operand::Imm(10))},
      {"JUMP_SET @11", Insn(Opcode::kJumpSet, Operand::Imm(11))},
      {"ALLOC r4, sp[64]", Insn(Opcode::kAlloc, Operand::Reg(4), Operand::Sp(64))},
      {"PREFETCH [r3+64]", Insn(Opcode::kPrefetch, Operand::Mem(3, 64))},
      {"NEXT_ITER", Insn(Opcode::kNextIter)},
      {"RETURN", Insn(Opcode::kReturn)},
  };
  std::set<Opcode> seen;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(One(c.text), c.want);
    seen.insert(c.want.op);
  }
  EXPECT_EQ(seen.size(), kAllOpcodes.size()) << "a mnemonic is missing from this test";
}

TEST(AssemblerOpcodes, MnemonicsAndKeywordsAreCaseInsensitive) {
  EXPECT_EQ(One("move R1, CUR_PTR"), Insn(Opcode::kMove, Operand::Reg(1), Operand::CurPtr()));
  EXPECT_EQ(One("Jump_Eq @3"), Insn(Opcode::kJumpEq, Operand::Imm(3)));
  EXPECT_EQ(One("mv SP[8], Data[r2]"), Insn(Opcode::kMove, Operand::Sp(8), Operand::DataIdx(2, 0)));
  EXPECT_EQ(One("load DATA"), Insn(Opcode::kLoad));
  EXPECT_EQ(One("return"), Insn(Opcode::kReturn));
}

TEST(AssemblerOpcodes, WidthSuffix) {
  EXPECT_EQ(One("MOVE r1, r2").width, 8);
  EXPECT_EQ(One("MOVE.1 r1, r2").width, 1);
  EXPECT_EQ(One("MOVE.2 r1, r2").width, 2);
  EXPECT_EQ(One("MOVE.4 sp[8], r1"), Insn(Opcode::kMove, Operand::Sp(8), Operand::Reg(1), 4));
  EXPECT_EQ(One("MOVE.8 r1, r2").width, 8);
  EXPECT_EQ(One("compare.2 r1, 7"), Insn(Opcode::kCompare, Operand::Reg(1), Operand::Imm(7), 2));
  EXPECT_EQ(One("JUMP_LT.4 @1"), Insn(Opcode::kJumpLt, Operand::Imm(1), Operand::None(), 4));
}

// ---------------------------------------------------------------------------
// Operands

TEST(AssemblerOperands, Registers) {
  EXPECT_EQ(One("MOVE r0, r15"), Insn(Opcode::kMove, Operand::Reg(0), Operand::Reg(15)));
  EXPECT_EQ(One("MOVE r10, r9").a, Operand::Reg(10));
}

TEST(AssemblerOperands, Immediates) {
  auto imm = [](const char* text) { return One(std::string("MOVE r1, ") + text).b; };
  EXPECT_EQ(imm("0"), Operand::Imm(0));
  EXPECT_EQ(imm("42"), Operand::Imm(42));
  EXPECT_EQ(imm("-42"), Operand::Imm(-42));
  EXPECT_EQ(imm("0x2A"), Operand::Imm(42));
  EXPECT_EQ(imm("0XfF"), Operand::Imm(255));
  EXPECT_EQ(imm("-0x10"), Operand::Imm(-16));
  EXPECT_EQ(imm("9223372036854775807"), Operand::Imm(kMax64));
  EXPECT_EQ(imm("-9223372036854775808"), Operand::Imm(kMin64));
  // 64-bit patterns: the unsigned spelling of a negative value.
  EXPECT_EQ(imm("0xffffffffffffffff"), Operand::Imm(-1));
  EXPECT_EQ(imm("18446744073709551615"), Operand::Imm(-1));
  EXPECT_EQ(imm("0x8000000000000000"), Operand::Imm(kMin64));
}

TEST(AssemblerOperands, ScratchPadDataAndFarMemory) {
  auto src = [](const char* text) { return One(std::string("MOVE r1, ") + text).b; };
  EXPECT_EQ(src("cur_ptr"), Operand::CurPtr());
  EXPECT_EQ(src("sp[8]"), Operand::Sp(8));
  EXPECT_EQ(src("scratch_pad[8]"), Operand::Sp(8));
  EXPECT_EQ(src("sp[-8]"), Operand::Sp(-8));
  EXPECT_EQ(src("sp[0x10]"), Operand::Sp(16));
  EXPECT_EQ(src("sp[r2]"), Operand::SpIdx(2, 0));
  EXPECT_EQ(src("sp[r2+8]"), Operand::SpIdx(2, 8));
  EXPECT_EQ(src("sp[r2-8]"), Operand::SpIdx(2, -8));
  EXPECT_EQ(src("sp[r2+-8]"), Operand::SpIdx(2, -8));
  EXPECT_EQ(src("scratch_pad[r15+1]"), Operand::SpIdx(15, 1));
  EXPECT_EQ(src("data[40]"), Operand::Data(40));
  EXPECT_EQ(src("data[r3]"), Operand::DataIdx(3, 0));
  EXPECT_EQ(src("data[r3-1]"), Operand::DataIdx(3, -1));
  EXPECT_EQ(src("data[r3-9223372036854775808]"), Operand::DataIdx(3, kMin64));
  EXPECT_EQ(src("data[9223372036854775807]"), Operand::Data(kMax64));
  EXPECT_EQ(One("STORE [r1], 0").a, Operand::Mem(1, 0));
  EXPECT_EQ(One("STORE [r1+8], 0").a, Operand::Mem(1, 8));
  EXPECT_EQ(One("STORE [r1-8], 0").a, Operand::Mem(1, -8));
}

TEST(AssemblerOperands, WhitespaceInsideBrackets) {
  EXPECT_EQ(One("ADD r1, sp[ r2 + 8 ]").b, Operand::SpIdx(2, 8));
  EXPECT_EQ(One("STORE [ r1 - 8 ] r2"), Insn(Opcode::kStore, Operand::Mem(1, -8), Operand::Reg(2)));
  EXPECT_EQ(One("MOVE r1, data[ 4 ]").b, Operand::Data(4));
}

TEST(AssemblerOperands, CommasAreOptional) {
  EXPECT_EQ(One("COMPARE scratch_pad[0] data[0]"),
            Insn(Opcode::kCompare, Operand::Sp(0), Operand::Data(0)));
  EXPECT_EQ(One("MOVE r1,r2"), Insn(Opcode::kMove, Operand::Reg(1), Operand::Reg(2)));
  EXPECT_EQ(One("MOVE r1 ,  r2"), Insn(Opcode::kMove, Operand::Reg(1), Operand::Reg(2)));
  EXPECT_EQ(One("LOAD data 32"), Insn(Opcode::kLoad, Operand::Imm(32)));
}

TEST(AssemblerOperands, DestinationsTheVerifierJudges) {
  // data[] is not writable, but that is the verifier's call, not the parser's.
  EXPECT_EQ(One("MOVE data[0], r1"), Insn(Opcode::kMove, Operand::Data(0), Operand::Reg(1)));
  EXPECT_EQ(One("ADD cur_ptr, 8"), Insn(Opcode::kAdd, Operand::CurPtr(), Operand::Imm(8)));
  EXPECT_EQ(One("NOT data[r1+2]"), Insn(Opcode::kNot, Operand::DataIdx(1, 2)));
}

TEST(AssemblerOperands, EquConstants) {
  const std::vector<Instruction> p = AssembleOk(
      ".equ KEY 0xffffffff\n"
      ".equ OFF, 8\n"
      ".EQU NEG -3\n"
      ".equ ALIAS KEY\n"
      "MOVE.4 sp[OFF], KEY\n"
      "MOVE r1, -OFF\n"
      "ADD r1, sp[r2+OFF]\n"
      "ADD r1, data[r2-OFF]\n"
      "STORE [r3-OFF], NEG\n"
      "LOAD data, OFF\n"
      "MOVE r2, ALIAS\n");
  const std::vector<Instruction> want = {
      Insn(Opcode::kMove, Operand::Sp(8), Operand::Imm(0xffffffff), 4),
      Insn(Opcode::kMove, Operand::Reg(1), Operand::Imm(-8)),
      Insn(Opcode::kAdd, Operand::Reg(1), Operand::SpIdx(2, 8)),
      Insn(Opcode::kAdd, Operand::Reg(1), Operand::DataIdx(2, -8)),
      Insn(Opcode::kStore, Operand::Mem(3, -8), Operand::Imm(-3)),
      Insn(Opcode::kLoad, Operand::Imm(8)),
      Insn(Opcode::kMove, Operand::Reg(2), Operand::Imm(0xffffffff)),
  };
  EXPECT_EQ(p, want);
}

// ---------------------------------------------------------------------------
// Labels, comments, layout

TEST(AssemblerLabels, ForwardBackwardAndEnd) {
  const std::vector<Instruction> p = AssembleOk(
      "start:\n"
      "  LOAD data\n"
      "  JUMP_EQ done\n"        // forward
      "mid: COMPARE r1, 0\n"    // label sharing a line
      "  JUMP start\n"          // backward: assembles, the verifier rejects it
      "  JUMP end\n"            // one past the last instruction
      "done:\n"
      "also_done:\n"            // two labels on one instruction
      "  RETURN\n"
      "  JUMP_NE mid\n"
      "end:\n");
  const std::vector<Instruction> want = {
      Insn(Opcode::kLoad),
      Insn(Opcode::kJumpEq, Operand::Imm(5)),
      Insn(Opcode::kCompare, Operand::Reg(1), Operand::Imm(0)),
      Insn(Opcode::kJump, Operand::Imm(0)),
      Insn(Opcode::kJump, Operand::Imm(7)),
      Insn(Opcode::kReturn),
      Insn(Opcode::kJumpNe, Operand::Imm(2)),
  };
  EXPECT_EQ(p, want);
}

TEST(AssemblerLabels, MultipleLabelsOnOneLineAndAtIndex) {
  EXPECT_EQ(AssembleOk("a: b : JUMP b\nJUMP a"),
            (std::vector<Instruction>{Insn(Opcode::kJump, Operand::Imm(0)),
                                      Insn(Opcode::kJump, Operand::Imm(0))}));
  EXPECT_EQ(One("JUMP @-3").a, Operand::Imm(-3));
  EXPECT_EQ(One("JUMP @0x10").a, Operand::Imm(16));
  EXPECT_EQ(One("JUMP @9223372036854775807").a, Operand::Imm(kMax64));
}

TEST(AssemblerLayout, CommentsOfEveryKind) {
  const std::vector<Instruction> p = AssembleOk(
      "; semicolon\n"
      "// slashes\n"
      "# hash\n"
      "/* block\n"
      "   over lines */ LOAD data /* inline */ , 8 // trailing\n"
      "RETURN ; done\n"
      "NEXT_ITER # also\n"
      "/**/ RETURN /* a */ /* b */\n");
  const std::vector<Instruction> want = {Insn(Opcode::kLoad, Operand::Imm(8)),
                                         Insn(Opcode::kReturn), Insn(Opcode::kNextIter),
                                         Insn(Opcode::kReturn)};
  EXPECT_EQ(p, want);
}

TEST(AssemblerLayout, EmptyAndBlankPrograms) {
  EXPECT_TRUE(AssembleOk("").empty());
  EXPECT_TRUE(AssembleOk("\n\n   \t\n; only a comment\n").empty());
  EXPECT_EQ(AssembleOk("RETURN").size(), 1u);  // no trailing newline
  EXPECT_EQ(AssembleOk("\r\nLOAD data\r\nRETURN\r\n").size(), 2u);
}

TEST(AssemblerLayout, LineNumbersCountLinesInsideBlockComments) {
  EXPECT_EQ(ErrorOf("/* one\n two\n three */\nMOOV r1, r2"), "line 4: unknown mnemonic 'MOOV'");
  EXPECT_EQ(ErrorOf("RETURN\n\n/*\n*/ /* x */ BAD"), "line 4: unknown mnemonic 'BAD'");
}

// ---------------------------------------------------------------------------
// Listing 4

// seed 001 Listing 4 in our syntax: unordered_map::find() over one node.
constexpr const char* kListing4 = R"(// Read single node
.equ KEY_NOT_FOUND 0xffffffff
Iter_Start:
/* Load the current node data pointed by cur_ptr */
LOAD data
/* Target key is stored in scratch_pad at offset=0;
 current key is stored in data at offset=0 */
COMPARE scratch_pad[0] data[0]
/* Forward jump if the key is found */
JUMP_EQ Return_success
/* Check the next pointer stored in data at offset=40 */
COMPARE 0 data[40]
/* Return; the key was not found */
JUMP_EQ Return_fail
/* Set the next pointer at cur_ptr */
MOVE cur_ptr data[40]
/* Start the next iteration */
NEXT_ITER
Return_fail:
/* Store the result, KEY_NOT_FOUND */
MOVE.4 scratch_pad[8] KEY_NOT_FOUND
/* Terminate the loop with SP */
RETURN
Return_success:
/* The found data is located in data at offset=8 */
MV scratch_pad[8] data[8]
/* Terminate the loop with SP */
RETURN
)";

std::vector<Instruction> Listing4Instructions() {
  return {
      Insn(Opcode::kLoad),
      Insn(Opcode::kCompare, Operand::Sp(0), Operand::Data(0)),
      Insn(Opcode::kJumpEq, Operand::Imm(9)),
      Insn(Opcode::kCompare, Operand::Imm(0), Operand::Data(40)),
      Insn(Opcode::kJumpEq, Operand::Imm(7)),
      Insn(Opcode::kMove, Operand::CurPtr(), Operand::Data(40)),
      Insn(Opcode::kNextIter),
      Insn(Opcode::kMove, Operand::Sp(8), Operand::Imm(0xffffffff), 4),
      Insn(Opcode::kReturn),
      Insn(Opcode::kMove, Operand::Sp(8), Operand::Data(8)),
      Insn(Opcode::kReturn),
  };
}

TEST(AssemblerListing4, AssemblesToTheExpectedInstructions) {
  EXPECT_EQ(AssembleOk(kListing4), Listing4Instructions());
}

TEST(AssemblerListing4, DisassemblesCanonically) {
  EXPECT_EQ(Disassemble(Listing4Instructions()),
            "  LOAD data\n"
            "  COMPARE sp[0], data[0]\n"
            "  JUMP_EQ L9\n"
            "  COMPARE 0, data[40]\n"
            "  JUMP_EQ L7\n"
            "  MOVE cur_ptr, data[40]\n"
            "  NEXT_ITER\n"
            "L7:\n"
            "  MOVE.4 sp[8], 4294967295\n"
            "  RETURN\n"
            "L9:\n"
            "  MOVE sp[8], data[8]\n"
            "  RETURN\n");
}

// ---------------------------------------------------------------------------
// Errors: each names the line and what is wrong.

struct ErrorCase {
  const char* name;
  const char* text;
  const char* message;  // substring of the error
};

// Names the case in ctest output instead of dumping its bytes.
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class AssemblerErrorTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(AssemblerErrorTest, Reports) {
  const ErrorCase& c = GetParam();
  const std::string error = ErrorOf(c.text);
  EXPECT_NE(error.find(c.message), std::string::npos)
      << "error: " << error << "\nwanted: " << c.message;
}

const ErrorCase kErrorCases[] = {
    {"UnknownMnemonic", "LOAD data\nRETURN\n\n\n\n\nMOOV r1, r2", "line 7: unknown mnemonic 'MOOV'"},
    {"UnknownMnemonicWithWidth", "MOOV.4 r1, r2", "line 1: unknown mnemonic 'MOOV'"},
    {"UndefinedLabel", "LOAD data\nCOMPARE r1, 0\nJUMP_EQ done\nRETURN", "line 3: undefined label 'done'"},
    {"LabelIsCaseSensitive", "JUMP Done\ndone: RETURN", "line 1: undefined label 'Done'"},
    {"DuplicateLabel", "a: RETURN\na: RETURN", "line 2: duplicate label 'a' (first defined on line 1)"},
    {"JumpTooManyOperands", "LOAD data\n\n\nJUMP_EQ a, b", "line 4: JUMP_EQ takes 1 operand, got 2"},
    {"JumpNoOperand", "JUMP", "line 1: JUMP takes 1 operand, got 0"},
    {"JumpToRegisterLikeNonLabel", "JUMP 5", "line 1: jump target must be a label or @index, got '5'"},
    {"JumpBadIndex", "JUMP @x1", "line 1: bad jump target '@x1'"},
    {"RegisterOutOfRange", "\n\n\n\nMOVE r16, r1", "line 5: register r16 does not exist (r0..r15)"},
    {"IndexRegisterOutOfRange", "ADD r1, sp[r99+8]", "line 1: register r99 does not exist (r0..r15)"},
    {"HugeRegister", "MOVE r1, r99999999999999999999", "register r99999999999999999999 does not exist"},
    {"BadWidth", "\nMOVE.3 r1, r2", "line 2: width .3 is not 1, 2, 4 or 8"},
    {"EmptyWidth", "MOVE. r1, r2", "line 1: width . is not 1, 2, 4 or 8"},
    {"WordWidth", "MOVE.w r1, r2", "line 1: width .w is not 1, 2, 4 or 8"},
    {"MoveOneOperand", "MOVE r1", "line 1: MOVE takes 2 operands, got 1"},
    {"AddThreeOperands", "ADD r1, r2, r3", "line 1: ADD takes 2 operands, got 3"},
    {"NotTwoOperands", "NOT r1, r2", "line 1: NOT takes 1 operand, got 2"},
    {"ReturnWithOperand", "RETURN r1", "line 1: RETURN takes no operands, got 1"},
    {"NextIterWithOperand", "NEXT_ITER 0", "line 1: NEXT_ITER takes no operands, got 1"},
    {"LoadNoOperand", "LOAD", "line 1: LOAD takes 1 or 2 operands"},
    {"LoadThreeOperands", "LOAD data, 8, 9", "line 1: LOAD takes 1 or 2 operands"},
    {"LoadNotData", "LOAD sp", "line 1: LOAD's first operand must be 'data'"},
    {"LoadRegisterWindow", "LOAD data, r1", "line 1: expected a number or constant, got 'r1'"},
    {"ImmediateDestination", "MOVE 5, r1", "line 1: MOVE destination cannot be an immediate"},
    {"ImmediateDestinationUnary", "NEG 5", "line 1: NEG destination cannot be an immediate"},
    {"ConstantDestination", ".equ K 1\nADD K, r1", "line 2: ADD destination cannot be an immediate"},
    {"StoreToRegister", "STORE r1, r2", "line 1: STORE destination must be far memory [rN+off]"},
    {"StoreToScratchPad", "STORE sp[8], r2", "STORE destination must be far memory"},
    {"FarMemorySource", "MOVE r1, [r2+8]", "line 1: far memory operand '[r2+8]' can only be a STORE destination"},
    {"FarMemoryDestination", "MOVE [r2], r1", "can only be a STORE destination"},
    {"FarMemoryStoreSource", "STORE [r1], [r2]", "can only be a STORE destination"},
    {"FarMemoryWithoutRegister", "STORE [8], r1", "line 1: far memory operand '[8]' needs a base register"},
    {"PrefetchOfARegister", "PREFETCH r1", "line 1: PREFETCH's operand must be far memory [rN+off], got 'r1'"},
    {"PrefetchTwoOperands", "PREFETCH [r1], 64", "line 1: PREFETCH takes 1 operand, got 2"},
    {"PrefetchWithoutRegister", "PREFETCH [64]", "far memory operand '[64]' needs a base register"},
    {"AllocImmediate", "ALLOC 5, sp[0]", "line 1: ALLOC destination: expected a register"},
    {"AllocBadRegister", "ALLOC r20, sp[0]", "register r20 does not exist"},
    {"AllocTableNotSp", "ALLOC r1, data[0]", "line 1: ALLOC's region table must be sp[offset]"},
    {"AllocTableIndexed", "ALLOC r1, sp[r2+0]", "ALLOC's region table must be sp[offset]"},
    {"UndefinedConstant", "\n\nMOVE.4 sp[8], KEY_NOT_FOUND", "line 3: undefined constant 'KEY_NOT_FOUND'"},
    {"ConstantUsedBeforeDefinition", "MOVE r1, K\n.equ K 3", "line 1: undefined constant 'K'"},
    {"UndefinedConstantInOffset", "MOVE r1, sp[r1+OFF]", "line 1: undefined constant 'OFF'"},
    {"DuplicateConstant", ".equ K 1\n.equ K 2", "line 2: duplicate constant 'K' (first defined on line 1)"},
    {"ConstantNamedLikeRegister", ".equ r3 1", "line 1: 'r3' is a register or operand keyword"},
    {"ConstantNamedCurPtr", ".equ CUR_PTR 1", "'CUR_PTR' is a register or operand keyword"},
    {"EquMissingValue", ".equ K", "line 1: .equ takes a name and a value, got 1 operand"},
    {"EquBadName", ".equ 5 5", "line 1: constant name '5' is not an identifier"},
    {"UnknownDirective", ".word 5", "line 1: unknown directive '.word'"},
    {"ImmediateTooBig", "MOVE r1, 18446744073709551616", "line 1: '18446744073709551616' is out of range"},
    {"HexTooBig", "MOVE r1, 0x10000000000000000", "is out of range"},
    {"NegativeTooSmall", "MOVE r1, -9223372036854775809", "'-9223372036854775809' is out of range"},
    {"OffsetTooBig", "MOVE r1, sp[9223372036854775808]", "'9223372036854775808' is out of range (offsets are signed 64-bit)"},
    {"IndexedOffsetTooBig", "MOVE r1, sp[r1+0xffffffffffffffff]", "is out of range"},
    {"BadNumber", "MOVE r1, 12ab", "line 1: bad number '12ab'"},
    {"BadHex", "MOVE r1, 0x", "line 1: bad number '0x'"},
    {"BareSp", "MOVE r1, sp", "line 1: 'sp' needs an offset: sp[off]"},
    {"UnknownMemoryBase", "MOVE r1, mem[8]", "line 1: unknown memory operand 'mem[8]'"},
    {"MissingBracket", "MOVE r1, sp[8", "line 1: missing ']'"},
    {"EmptyBrackets", "MOVE r1, sp[]", "line 1: empty brackets"},
    {"JunkAfterBracket", "MOVE r1, sp[8]x", "line 1: bad operand 'sp[8]x'"},
    {"BadAddress", "MOVE r1, sp[r1*8]", "line 1: bad address 'r1*8'"},
    {"OffsetPlusRegister", "MOVE r1, sp[8+r1]", "line 1: bad number '8+r1'"},
    {"TrailingComma", "MOVE r1, r2,", "line 1: expected an operand after ','"},
    {"DoubleComma", "MOVE r1,, r2", "line 1: expected an operand before ','"},
    {"JumpTargetInNonJump", "MOVE r1, @3", "line 1: '@3' is a jump target; only jumps take one"},
    {"ColonWithoutLabel", ": RETURN", "line 1: ':' without a label name"},
    {"UnterminatedComment", "RETURN\n/* never\nclosed", "line 2: unterminated /* comment"},
    {"ErrorAfterLabelLine", "top:\n  LOAD data\n  JUMP_XX top", "line 3: unknown mnemonic 'JUMP_XX'"},
};

INSTANTIATE_TEST_SUITE_P(Assembler, AssemblerErrorTest, testing::ValuesIn(kErrorCases),
                         [](const testing::TestParamInfo<ErrorCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(AssemblerErrors, MessageIsExactlyLinePrefixed) {
  EXPECT_EQ(ErrorOf("LOAD data\n  JUMP_EQ a b"), "line 2: JUMP_EQ takes 1 operand, got 2");
  EXPECT_EQ(ErrorOf("RETURN\nJUMP done"), "line 2: undefined label 'done'");
}

// ---------------------------------------------------------------------------
// Disassembler

TEST(AssemblerDisassemble, CanonicalForms) {
  const std::vector<Instruction> p = {
      Insn(Opcode::kLoad, Operand::Imm(64)),                                  // 0
      Insn(Opcode::kStore, Operand::Mem(3, -8), Operand::Imm(-5), 2),         // 1
      Insn(Opcode::kAdd, Operand::SpIdx(1, 0), Operand::DataIdx(2, -16)),     // 2
      Insn(Opcode::kNot, Operand::Reg(15), Operand::None(), 1),               // 3
      Insn(Opcode::kJump, Operand::Imm(8)),                                   // 4: one past end
      Insn(Opcode::kJumpGeu, Operand::Imm(3)),                                // 5: backward
      Insn(Opcode::kJumpSet, Operand::Imm(-2)),                               // 6: negative
      Insn(Opcode::kAlloc, Operand::Reg(4), Operand::Sp(-64)),                // 7
  };
  EXPECT_EQ(Disassemble(p),
            "  LOAD data, 64\n"
            "  STORE.2 [r3-8], -5\n"
            "  ADD sp[r1], data[r2-16]\n"
            "L3:\n"
            "  NOT.1 r15\n"
            "  JUMP @8\n"
            "  JUMP_GEU L3\n"
            "  JUMP_SET @-2\n"
            "  ALLOC r4, sp[-64]\n");
}

TEST(AssemblerDisassemble, ExtremeValues) {
  const std::vector<Instruction> p = {
      Insn(Opcode::kMove, Operand::Reg(1), Operand::Imm(kMin64)),
      Insn(Opcode::kMove, Operand::DataIdx(2, kMin64), Operand::Imm(kMax64)),
      Insn(Opcode::kJump, Operand::Imm(kMin64)),
  };
  EXPECT_EQ(Disassemble(p),
            "  MOVE r1, -9223372036854775808\n"
            "  MOVE data[r2-9223372036854775808], 9223372036854775807\n"
            "  JUMP @-9223372036854775808\n");
  EXPECT_EQ(AssembleOk(Disassemble(p)), p);
}

TEST(AssemblerDisassemble, InstructionsWithoutTextFormAreComments) {
  Instruction stray_value = Insn(Opcode::kMove, Operand::Reg(1), Operand::Reg(2));
  stray_value.b.value = 7;  // a register operand has no offset to print
  Instruction bad_register = Insn(Opcode::kMove, Operand::Reg(1), Operand::Reg(2));
  bad_register.a.reg = 16;
  Instruction bad_kind = Insn(Opcode::kMove, Operand::Reg(1), Operand::Reg(2));
  bad_kind.b.kind = static_cast<OperandKind>(9);
  Instruction bad_opcode = Insn(Opcode::kReturn);
  bad_opcode.op = static_cast<Opcode>(0x7f);
  Instruction bad_width = Insn(Opcode::kReturn);
  bad_width.width = 3;
  const std::vector<Instruction> invalid = {
      stray_value,
      bad_register,
      bad_kind,
      bad_opcode,
      bad_width,
      Insn(Opcode::kMove, Operand::Imm(1), Operand::Reg(1)),         // immediate destination
      Insn(Opcode::kMove, Operand::Reg(1), Operand::Mem(1, 0)),      // far-memory source
      Insn(Opcode::kStore, Operand::Sp(0), Operand::Reg(1)),         // STORE to sp
      Insn(Opcode::kAdd, Operand::Reg(1)),                           // missing source
      Insn(Opcode::kNeg, Operand::Reg(1), Operand::Reg(2)),          // unary with a source
      Insn(Opcode::kJump, Operand::Reg(1)),                          // target not an index
      Insn(Opcode::kJump, Operand::Imm(1), Operand::Imm(2)),         // stray b
      Insn(Opcode::kLoad, Operand::Reg(1)),                          // window not immediate
      Insn(Opcode::kAlloc, Operand::Reg(1), Operand::SpIdx(1, 0)),   // table indexed
      Insn(Opcode::kReturn, Operand::Reg(1)),                        // terminal with operand
      Insn(Opcode::kCompare, Operand::None(), Operand::Reg(1)),      // missing lhs
  };
  for (size_t i = 0; i < invalid.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "case " << i);
    const Instruction one[] = {invalid[i]};
    const std::string text = Disassemble(one);
    EXPECT_EQ(text.rfind("  ; <invalid instruction", 0), 0u) << text;
    // It is a comment: the text still assembles (to nothing).
    EXPECT_TRUE(AssembleOk(text).empty()) << text;
  }
}

TEST(AssemblerDisassemble, JumpsWithoutTextFormGetNoLabel) {
  const std::vector<Instruction> p = {
      Insn(Opcode::kJump, Operand::Imm(1), Operand::Reg(1)),  // no text form
      Insn(Opcode::kReturn),
  };
  EXPECT_EQ(Disassemble(p).find("L1:"), std::string::npos) << Disassemble(p);
}

// ---------------------------------------------------------------------------
// Round trip: Assemble(Disassemble(p)) == p for every p with a text form.

class ProgramGenerator {
 public:
  explicit ProgramGenerator(uint64_t seed) : rng_(seed) {}

  std::vector<Instruction> Program() {
    const size_t n = 1 + Below(40);
    std::vector<Instruction> p;
    for (size_t i = 0; i < n; ++i) p.push_back(RandomInstruction(n));
    return p;
  }

  // Every opcode / operand kind / width generated so far: the test checks
  // the generator really covers the ISA.
  std::set<Opcode> opcodes_seen;
  std::set<OperandKind> kinds_seen;
  std::set<uint8_t> widths_seen;

 private:
  uint64_t Below(uint64_t n) { return rng_() % n; }

  int Register() { return static_cast<int>(Below(isa::kNumRegisters)); }

  // Small values, boundaries and arbitrary 64-bit patterns.
  int64_t Value() {
    switch (Below(6)) {
      case 0: return static_cast<int64_t>(Below(600)) - 300;
      case 1: return static_cast<int64_t>(Below(300));
      case 2: {
        constexpr int64_t kEdges[] = {0, 1, -1, kMin64, kMax64, kMin64 + 1, kMax64 - 1,
                                      int64_t{1} << 32, -(int64_t{1} << 31)};
        return kEdges[Below(std::size(kEdges))];
      }
      default: return static_cast<int64_t>(rng_());
    }
  }

  Operand Source() {
    switch (Below(7)) {
      case 0: return Operand::Reg(Register());
      case 1: return Operand::Imm(Value());
      case 2: return Operand::CurPtr();
      case 3: return Operand::Sp(Value());
      case 4: return Operand::SpIdx(Register(), Value());
      case 5: return Operand::Data(Value());
      default: return Operand::DataIdx(Register(), Value());
    }
  }

  Operand Destination() {
    Operand o = Source();
    while (o.kind == OperandKind::kImm) o = Source();
    return o;
  }

  // Inside the program (a label), one past the end, or anything at all.
  int64_t Target(size_t n) {
    switch (Below(4)) {
      case 0:
      case 1: return static_cast<int64_t>(Below(n));
      case 2: return static_cast<int64_t>(n);
      default: return Value();
    }
  }

  Instruction RandomInstruction(size_t n) {
    Instruction in;
    in.op = kAllOpcodes[Below(kAllOpcodes.size())];
    constexpr uint8_t kWidths[] = {1, 2, 4, 8};
    in.width = kWidths[Below(4)];
    const Opcode op = in.op;
    if (op == Opcode::kLoad) {
      if (Below(2)) in.a = Operand::Imm(Value());
    } else if (op == Opcode::kStore) {
      in.a = Operand::Mem(Register(), Value());
      in.b = Source();
    } else if (isa::IsUnaryAlu(op)) {
      in.a = Destination();
    } else if (isa::IsAlu(op) || op == Opcode::kMove) {
      in.a = Destination();
      in.b = Source();
    } else if (op == Opcode::kCompare) {
      in.a = Source();
      in.b = Source();
    } else if (isa::IsJump(op)) {
      in.a = Operand::Imm(Target(n));
    } else if (op == Opcode::kAlloc) {
      in.a = Operand::Reg(Register());
      in.b = Operand::Sp(Value());
    } else if (op == Opcode::kPrefetch) {
      in.a = Operand::Mem(Register(), Value());
    }
    opcodes_seen.insert(in.op);
    kinds_seen.insert(in.a.kind);
    kinds_seen.insert(in.b.kind);
    widths_seen.insert(in.width);
    return in;
  }

  std::mt19937_64 rng_;
};

TEST(AssemblerRoundTrip, RandomProgramsSurviveDisassembleAssemble) {
  ProgramGenerator gen(20240517);
  constexpr int kPrograms = 4000;
  size_t labelled = 0;
  for (int i = 0; i < kPrograms; ++i) {
    const std::vector<Instruction> p = gen.Program();
    const std::string text = Disassemble(p);
    ASSERT_EQ(text.find("<invalid"), std::string::npos) << text;
    if (text.find("\nL") != std::string::npos || text.rfind("L", 0) == 0) ++labelled;
    Result<std::vector<Instruction>> back = Assemble(text);
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
    ASSERT_EQ(*back, p) << "program " << i << ":\n" << text;
    // The canonical text is a fixed point.
    ASSERT_EQ(Disassemble(*back), text);
  }
  EXPECT_EQ(gen.opcodes_seen.size(), kAllOpcodes.size());
  EXPECT_EQ(gen.kinds_seen.size(), 9u);  // every OperandKind, kNone..kMem
  EXPECT_EQ(gen.widths_seen.size(), 4u);
  EXPECT_GT(labelled, static_cast<size_t>(kPrograms / 2));
}

TEST(AssemblerRoundTrip, HandWrittenTextSurvivesAssembleDisassemble) {
  // Not byte-equal (aliases, hex, comments go away) but equal as programs.
  const std::vector<Instruction> p = AssembleOk(kListing4);
  EXPECT_EQ(AssembleOk(Disassemble(p)), p);
}

// ---------------------------------------------------------------------------
// Binary encoding

TEST(AssemblerEncoding, RandomProgramsSurviveEncodeDecode) {
  ProgramGenerator gen(7);
  for (int i = 0; i < 1000; ++i) {
    const std::vector<Instruction> p = gen.Program();
    const std::vector<uint8_t> bytes = EncodeProgram(p);
    ASSERT_EQ(bytes.size(), kProgramHeaderBytes + p.size() * kInstructionBytes);
    Result<std::vector<Instruction>> back = DecodeProgram(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(*back, p);
  }
}

TEST(AssemblerEncoding, ShapesTheAssemblerRejectsStillEncode) {
  // The encoder does not judge shapes; only the decoder's field checks apply.
  const std::vector<Instruction> p = {Insn(Opcode::kMove, Operand::Imm(1), Operand::Mem(15, -1)),
                                      Insn(Opcode::kReturn, Operand::Sp(3), Operand::CurPtr(), 1)};
  Result<std::vector<Instruction>> back = DecodeProgram(EncodeProgram(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, p);
}

TEST(AssemblerEncoding, EmptyProgram) {
  const std::vector<uint8_t> bytes = EncodeProgram({});
  EXPECT_EQ(bytes.size(), kProgramHeaderBytes);
  Result<std::vector<Instruction>> back = DecodeProgram(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->empty());
}

TEST(AssemblerEncoding, LayoutIsLittleEndianAsDocumented) {
  const Instruction p[] = {Insn(Opcode::kStore, Operand::Mem(3, -2), Operand::Imm(0x0102), 4)};
  const std::vector<uint8_t> b = EncodeProgram(p);
  ASSERT_EQ(b.size(), 40u);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "PULS");
  EXPECT_EQ(b[4], 1);   // version
  EXPECT_EQ(b[8], 1);   // count
  const uint8_t* in = b.data() + kProgramHeaderBytes;
  EXPECT_EQ(in[0], 0x02);  // STORE
  EXPECT_EQ(in[1], 4);
  EXPECT_EQ(in[2], static_cast<uint8_t>(OperandKind::kMem));
  EXPECT_EQ(in[3], 3);
  EXPECT_EQ(in[4], static_cast<uint8_t>(OperandKind::kImm));
  EXPECT_EQ(in[8], 0xfe);   // -2, little-endian
  EXPECT_EQ(in[15], 0xff);
  EXPECT_EQ(in[16], 0x02);
  EXPECT_EQ(in[17], 0x01);
}

// A valid two-instruction encoding to corrupt one field at a time.
std::vector<uint8_t> GoodBytes() {
  const Instruction p[] = {Insn(Opcode::kLoad),
                           Insn(Opcode::kMove, Operand::Reg(1), Operand::SpIdx(2, 8))};
  return EncodeProgram(p);
}

std::string DecodeError(const std::vector<uint8_t>& bytes) {
  Result<std::vector<Instruction>> r = DecodeProgram(bytes);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  return r.status().message();
}

constexpr size_t kSecond = kProgramHeaderBytes + kInstructionBytes;  // instruction 1

TEST(AssemblerEncoding, GoodBytesDecode) { EXPECT_TRUE(DecodeProgram(GoodBytes()).ok()); }

TEST(AssemblerEncoding, RejectsBadMagic) {
  std::vector<uint8_t> b = GoodBytes();
  b[0] = 'X';
  EXPECT_NE(DecodeError(b).find("bad magic"), std::string::npos);
}

TEST(AssemblerEncoding, RejectsBadVersion) {
  std::vector<uint8_t> b = GoodBytes();
  b[4] = 3;
  EXPECT_NE(DecodeError(b).find("unsupported encoding version 3 (this build reads versions 1 to 2)"),
            std::string::npos);
  b[4] = 0;
  EXPECT_NE(DecodeError(b).find("unsupported encoding version 0"), std::string::npos);
}

// Version 2 adds PREFETCH only: a program without it keeps version 1 (its
// bytes and hash unchanged for older builds), one with it is version 2, and
// any other header is refused: a version-1 header over a PREFETCH by name, a
// version-2 header over a program without one because each program has one
// encoding (decode and encode round-trip; the fuzzer found the second case).
TEST(AssemblerEncoding, PrefetchNeedsVersion2) {
  std::vector<uint8_t> b = GoodBytes();
  EXPECT_EQ(b[4], 1);
  b[4] = 2;
  EXPECT_NE(DecodeError(b).find("header says encoding version 2 but no instruction needs more than version 1"),
            std::string::npos);
  const Instruction p[] = {Insn(Opcode::kLoad), Insn(Opcode::kPrefetch, Operand::Mem(2, -64)),
                           Insn(Opcode::kReturn)};
  std::vector<uint8_t> hinted = EncodeProgram(p);
  EXPECT_EQ(hinted[4], 2);
  Result<std::vector<Instruction>> back = DecodeProgram(hinted);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)[1], p[1]);
  hinted[4] = 1;
  EXPECT_NE(DecodeError(hinted).find("instruction 1: PREFETCH needs encoding version 2, the header says 1"),
            std::string::npos);
}

TEST(AssemblerEncoding, RejectsReservedHeaderBytes) {
  std::vector<uint8_t> b = GoodBytes();
  b[6] = 1;  // flags
  EXPECT_NE(DecodeError(b).find("reserved"), std::string::npos);
  b = GoodBytes();
  b[12] = 1;
  EXPECT_NE(DecodeError(b).find("reserved"), std::string::npos);
}

TEST(AssemblerEncoding, RejectsTruncation) {
  std::vector<uint8_t> b = GoodBytes();
  b.resize(10);
  EXPECT_NE(DecodeError(b).find("shorter than the 16-byte header"), std::string::npos);
  b = GoodBytes();
  b.pop_back();
  EXPECT_NE(DecodeError(b).find("header says 2 instructions"), std::string::npos);
  b = GoodBytes();
  b[8] = 3;  // count disagrees with the body
  EXPECT_NE(DecodeError(b).find("header says 3 instructions"), std::string::npos);
}

TEST(AssemblerEncoding, RejectsBadOpcode) {
  std::vector<uint8_t> b = GoodBytes();
  b[kSecond + 0] = 0x03;
  EXPECT_NE(DecodeError(b).find("instruction 1: unknown opcode 3"), std::string::npos);
}

TEST(AssemblerEncoding, RejectsBadWidth) {
  std::vector<uint8_t> b = GoodBytes();
  b[kSecond + 1] = 3;
  EXPECT_NE(DecodeError(b).find("instruction 1: width 3"), std::string::npos);
}

TEST(AssemblerEncoding, RejectsBadOperandKind) {
  std::vector<uint8_t> b = GoodBytes();
  b[kSecond + 2] = 9;
  EXPECT_NE(DecodeError(b).find("instruction 1: operand a has unknown kind 9"), std::string::npos);
  b = GoodBytes();
  b[kSecond + 4] = 200;
  EXPECT_NE(DecodeError(b).find("instruction 1: operand b has unknown kind 200"),
            std::string::npos);
}

TEST(AssemblerEncoding, RejectsBadRegister) {
  std::vector<uint8_t> b = GoodBytes();
  b[kSecond + 3] = 16;
  EXPECT_NE(DecodeError(b).find("instruction 1: operand a names register r16"), std::string::npos);
  b = GoodBytes();
  b[kSecond + 5] = 255;
  EXPECT_NE(DecodeError(b).find("instruction 1: operand b names register r255"),
            std::string::npos);
}

TEST(AssemblerEncoding, RejectsReservedInstructionBytes) {
  std::vector<uint8_t> b = GoodBytes();
  b[kSecond + 7] = 1;
  EXPECT_NE(DecodeError(b).find("instruction 1: reserved bytes must be zero"), std::string::npos);
}

TEST(AssemblerEncoding, DisassembledBinaryReassemblesToSameBytes) {
  const std::vector<uint8_t> bytes = EncodeProgram(Listing4Instructions());
  Result<std::vector<Instruction>> decoded = DecodeProgram(bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(EncodeProgram(AssembleOk(Disassemble(*decoded))), bytes);
}

}  // namespace
}  // namespace pulse
