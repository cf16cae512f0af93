// Every verifier rejection, with the message it must give, and the facts it
// computes for accepted programs.
#include <gtest/gtest.h>

#include "pulse/assembler.h"
#include "pulse/program.h"

namespace pulse {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Operand;

Result<ProgramInfo> VerifyText(const std::string& text, VerifierOptions options = {}) {
  auto insns = Assemble(text);
  EXPECT_TRUE(insns.ok()) << insns.status().ToString();
  if (!insns.ok()) return insns.status();
  return VerifyProgram(*insns, options);
}

void ExpectRejected(const std::string& text, const std::string& fragment, VerifierOptions options = {}) {
  auto r = VerifyText(text, options);
  ASSERT_FALSE(r.ok()) << "accepted:\n" << text;
  EXPECT_NE(r.status().message().find(fragment), std::string::npos)
      << "message '" << r.status().message() << "' lacks '" << fragment << "'";
}

TEST(Verifier, AcceptsListing4AndComputesWindowAndPath) {
  auto r = VerifyText(R"(
      LOAD data
      COMPARE sp[0], data[0]
      JUMP_EQ found
      COMPARE 0, data[40]
      JUMP_EQ missing
      MOVE cur_ptr, data[40]
      NEXT_ITER
    missing:
      MOVE sp[8], 0xffffffff
      RETURN
    found:
      MOVE sp[8], data[8]
      RETURN)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->window_bytes, 48u);   // data[40] is the last byte range read
  EXPECT_EQ(r->scratch_bytes, 16u);  // sp[8..16)
  EXPECT_EQ(r->longest_path, 7u);    // LOAD, CMP, JEQ, CMP, JEQ, MOVE, NEXT_ITER
  EXPECT_FALSE(r->has_store);
}

TEST(Verifier, DeclaredWindowWins) {
  auto r = VerifyText("LOAD data, 128\nMOVE r1, 3\nMOVE r2, data[r1+8]\nRETURN");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->window_bytes, 128u);
  EXPECT_TRUE(r->has_indexed);
}

TEST(Verifier, RejectsEmptyProgram) {
  auto r = VerifyProgram(std::vector<Instruction>{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("empty"), std::string::npos);
}

TEST(Verifier, RejectsMissingLoad) { ExpectRejected("MOVE sp[0], 1\nRETURN", "instruction 0 (MOVE): the program must start with LOAD"); }

TEST(Verifier, RejectsSecondLoad) { ExpectRejected("LOAD data\nLOAD data\nRETURN", "instruction 1 (LOAD)"); }

TEST(Verifier, RejectsBackwardJump) {
  std::vector<Instruction> p = {{Opcode::kLoad, 8, {}, {}}, {Opcode::kMove, 8, Operand::Sp(0), Operand::Imm(1)},
                                {Opcode::kJump, 8, Operand::Imm(1), {}}, {Opcode::kReturn, 8, {}, {}}};
  auto r = VerifyProgram(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("instruction 2 (JUMP): jump to 1 goes backward"), std::string::npos)
      << r.status().message();
}

TEST(Verifier, RejectsJumpOutOfProgram) {
  std::vector<Instruction> p = {{Opcode::kLoad, 8, {}, {}}, {Opcode::kJump, 8, Operand::Imm(7), {}}, {Opcode::kReturn, 8, {}, {}}};
  auto r = VerifyProgram(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("instruction 1 (JUMP): jump to 7 leaves the program"), std::string::npos)
      << r.status().message();
}

TEST(Verifier, RejectsPathWithoutTerminal) {
  ExpectRejected("LOAD data\nCOMPARE sp[0], 1\nJUMP_EQ end\nRETURN\nend:\nMOVE sp[0], 2",
                 "without NEXT_ITER or RETURN");
}

TEST(Verifier, RejectsDataOutsideWindowLimit) { ExpectRejected("LOAD data\nMOVE r1, data[250]\nRETURN", "data[250] (8 bytes) is outside the 256-byte data window"); }

TEST(Verifier, RejectsDataOutsideDeclaredWindow) { ExpectRejected("LOAD data, 16\nMOVE.4 r1, data[16]\nRETURN", "outside the 16-byte data window"); }

TEST(Verifier, RejectsWindowOver256) { ExpectRejected("LOAD data, 300\nRETURN", "window of 300 bytes"); }

TEST(Verifier, RejectsScratchOutsideConfiguredPad) {
  VerifierOptions small;
  small.scratch_pad_bytes = 64;
  ExpectRejected("LOAD data\nMOVE sp[60], 1\nRETURN", "sp[60] (8 bytes) is outside the 64-byte scratch pad", small);
  EXPECT_TRUE(VerifyText("LOAD data\nMOVE sp[60], 1\nRETURN").ok());  // fits the default 4 KB
}

// Offsets near INT64_MAX: offset + width must not wrap into "inside"
// (found by fuzz_program, fuzz/regressions/program/verifier_offset_overflow.bin).
TEST(Verifier, RejectsOffsetsWhoseEndOverflows) {
  ExpectRejected("LOAD data\nMOVE sp[0x7ffffffffffffffe], 1\nRETURN", "is outside the 4096-byte scratch pad");
  ExpectRejected("LOAD data\nMOVE r1, data[0x7ffffffffffffffc]\nRETURN", "is outside the 256-byte data window");
}

TEST(Verifier, RejectsTooLongProgram) {
  VerifierOptions opt;
  opt.max_instructions = 3;
  ExpectRejected("LOAD data\nMOVE sp[0], 1\nMOVE sp[0], 2\nRETURN", "the limit is 3", opt);
}

TEST(Verifier, RejectsRegisterReadBeforeWrite) {
  ExpectRejected("LOAD data\nMOVE sp[0], r3\nRETURN", "instruction 1 (MOVE): reads r3 before it is written");
  // Written on only one of two paths is still a read of an undefined register.
  ExpectRejected("LOAD data\nCOMPARE sp[0], 0\nJUMP_EQ skip\nMOVE r2, 1\nskip:\nADD sp[0], r2\nRETURN",
                 "reads r2 before it is written");
  // ... and the index register of an operand counts as a read.
  ExpectRejected("LOAD data, 8\nMOVE r1, data[r5]\nRETURN", "reads r5");
}

TEST(Verifier, RejectsConditionalJumpWithoutCompare) { ExpectRejected("LOAD data\nJUMP_EQ end\nend:\nRETURN", "without a COMPARE"); }

TEST(Verifier, RejectsWritesToDataWindow) { ExpectRejected("LOAD data\nMOVE data[0], 1\nRETURN", "read-only"); }

TEST(Verifier, RejectsImmediateDestination) {
  std::vector<Instruction> p = {{Opcode::kLoad, 8, {}, {}}, {Opcode::kAdd, 8, Operand::Imm(1), Operand::Imm(2)}, {Opcode::kReturn, 8, {}, {}}};
  auto r = VerifyProgram(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("destination"), std::string::npos);
}

TEST(Verifier, RejectsStoreToNonMemoryAndBadWidth) {
  std::vector<Instruction> p = {{Opcode::kLoad, 8, {}, {}}, {Opcode::kStore, 8, Operand::Sp(0), Operand::Imm(2)}, {Opcode::kReturn, 8, {}, {}}};
  EXPECT_FALSE(VerifyProgram(p).ok());
  p[1] = {Opcode::kMove, 3, Operand::Sp(0), Operand::Imm(2)};
  auto r = VerifyProgram(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("width 3"), std::string::npos);
}

TEST(Verifier, RejectsIndexedDataWithoutDeclaredWindow) { ExpectRejected("LOAD data\nMOVE r1, 0\nMOVE r2, data[r1]\nRETURN", "explicit window"); }

TEST(Verifier, FlagsStoreAndAlloc) {
  auto r = VerifyText("LOAD data\nALLOC r1, sp[16]\nSTORE [r1+8], 5\nRETURN");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->has_store);
  EXPECT_TRUE(r->has_alloc);
  EXPECT_EQ(r->scratch_bytes, 24u);
}

TEST(Verifier, AcceptsPrefetchOfFarMemoryOnly) {
  auto r = VerifyText("LOAD data\nMOVE r1, data[0]\nPREFETCH [r1+8]\nPREFETCH [r1-4096]\nRETURN");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->has_store);  // a hint writes nothing: retries may repeat it
  EXPECT_EQ(r->window_bytes, 8u);
  ExpectRejected("LOAD data\nPREFETCH [r3]\nRETURN", "instruction 1 (PREFETCH): reads r3 before it is written");
  std::vector<Instruction> p = {{Opcode::kLoad, 8, {}, {}},
                                {Opcode::kPrefetch, 8, Operand::Sp(0), {}},
                                {Opcode::kReturn, 8, {}, {}}};
  auto bad = VerifyProgram(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("instruction 1 (PREFETCH): PREFETCH takes one far-memory operand"),
            std::string::npos);
  p[1] = {Opcode::kPrefetch, 8, Operand::Mem(0, 0), Operand::Imm(64)};
  EXPECT_FALSE(VerifyProgram(p).ok());
  p[1] = {Opcode::kPrefetch, 4, Operand::Mem(0, 0), {}};
  bad = VerifyProgram(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("PREFETCH has width 8"), std::string::npos);
}

TEST(Verifier, LongestPathTakesTheLongerBranch) {
  auto r = VerifyText(R"(
      LOAD data
      COMPARE sp[0], 0
      JUMP_EQ short
      ADD sp[8], 1
      ADD sp[8], 1
      ADD sp[8], 1
      RETURN
    short:
      RETURN)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->longest_path, 7u);
}

}  // namespace
}  // namespace pulse
