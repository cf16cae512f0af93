// Instruction semantics, faults, the iteration limit and ALLOC.  Every case
// runs on the reference interpreter and on the engine (RunBoth), which must
// agree; the expected values are computed here by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "engine/sum_list_program.h"
#include "engine/run_both.h"

namespace pulse {
namespace {

using testing::FarHeap;
using testing::MustBuild;
using testing::RunBoth;
using testing::SpGet;
using testing::SpPut;
using testing::StateAt;

constexpr uint64_t kBase = 0x10000;

struct AluCase {
  std::string body;   // instructions between LOAD and RETURN
  uint64_t expected;  // sp[0..8) afterwards
};

void PrintTo(const AluCase& c, std::ostream* os) { *os << c.body; }

class AluTest : public ::testing::TestWithParam<AluCase> {};

TEST_P(AluTest, ComputesExpectedValue) {
  FarHeap heap(kBase, 4096);
  const uint64_t node = heap.Alloc(64);
  heap.Put<uint64_t>(node, 0x1122334455667788ull);  // data[0]
  heap.Put<uint64_t>(node + 8, 7);                    // data[8]
  auto program = MustBuild("LOAD data, 64\n" + GetParam().body + "\nRETURN");
  ASSERT_NE(program, nullptr);
  auto r = RunBoth(program, {&heap}, StateAt(node));
  ASSERT_EQ(r.outcome.status, TraversalStatus::kDone);
  EXPECT_EQ(SpGet<uint64_t>(r.state, 0), GetParam().expected) << GetParam().body;
}

INSTANTIATE_TEST_SUITE_P(
    Instructions, AluTest,
    ::testing::Values(
        AluCase{"MOVE sp[0], 5\nADD sp[0], 3", 8}, AluCase{"MOVE sp[0], 5\nSUB sp[0], 7", uint64_t(-2)},
        AluCase{"MOVE r1, 6\nMUL r1, data[8]\nMOVE sp[0], r1", 42},
        AluCase{"MOVE r1, 43\nDIV r1, data[8]\nMOVE sp[0], r1", 6},
        AluCase{"MOVE r1, -43\nSDIV r1, 7\nMOVE sp[0], r1", uint64_t(-6)},
        AluCase{"MOVE r1, 43\nMOD r1, 7\nMOVE sp[0], r1", 1},
        AluCase{"MOVE r1, -43\nSMOD r1, 7\nMOVE sp[0], r1", uint64_t(-1)},
        AluCase{"MOVE r1, 0xf0\nAND r1, 0x3c\nMOVE sp[0], r1", 0x30},
        AluCase{"MOVE r1, 0xf0\nOR r1, 0x0f\nMOVE sp[0], r1", 0xff},
        AluCase{"MOVE r1, 0xff\nXOR r1, 0x0f\nMOVE sp[0], r1", 0xf0},
        AluCase{"MOVE r1, 0\nNOT r1\nMOVE sp[0], r1", ~0ull},
        AluCase{"MOVE r1, 5\nNEG r1\nMOVE sp[0], r1", uint64_t(-5)},
        AluCase{"MOVE r1, 1\nSHL r1, 63\nMOVE sp[0], r1", 1ull << 63},
        AluCase{"MOVE r1, 1\nSHL r1, 65\nMOVE sp[0], r1", 2},  // count modulo 64
        AluCase{"MOVE r1, -16\nSHR r1, 60\nMOVE sp[0], r1", 0xf},
        AluCase{"MOVE r1, -16\nSAR r1, 2\nMOVE sp[0], r1", uint64_t(-4)},
        // Widths: operands read at the width, results truncated and zero-extended.
        AluCase{"MOVE r1, data[0]\nMOVE.4 r2, r1\nMOVE sp[0], r2", 0x55667788},
        AluCase{"MOVE.2 sp[0], data[0]", 0x7788}, AluCase{"MOVE.1 sp[0], data[0]", 0x88},
        AluCase{"MOVE sp[0], -1\nMOVE.1 sp[0], 0", 0xffffffffffffff00ull},  // only one byte written
        AluCase{"MOVE r1, 0xffffffff\nADD.4 r1, 1\nMOVE sp[0], r1", 0},
        AluCase{"MOVE r1, 0x7fffffff\nADD.4 r1, 1\nMOVE sp[0], r1", 0x80000000},
        AluCase{"MOVE r1, -8\nSAR.4 r1, 1\nMOVE sp[0], r1", 0xfffffffc},
        AluCase{"MOVE r1, -7\nSDIV.4 r1, 2\nMOVE sp[0], r1", 0xfffffffd},
        AluCase{"MOVE.2 sp[0], 0xffff\nADD.2 sp[0], 1", 0},
        AluCase{"MOVE r1, 0x80000000\nSHL.4 r1, 1\nMOVE sp[0], r1", 0},
        // Operands: cur_ptr and register-indexed sp/data.
        AluCase{"MOVE sp[0], cur_ptr\nSUB sp[0], cur_ptr", 0},
        AluCase{"MOVE r1, 8\nMOVE sp[0], data[r1+0]", 7},
        AluCase{"MOVE r1, 4\nMOVE.4 sp[r1+4], 9\nMOVE.4 sp[0], sp[8]", 9},
        AluCase{"MOVE r1, 16\nMOVE sp[0], data[r1-8]", 7},
        // INT_MIN / -1 wraps instead of trapping.
        AluCase{"MOVE r1, 1\nSHL r1, 63\nSDIV r1, -1\nMOVE sp[0], r1", 1ull << 63}));

struct JumpCase {
  std::string jump;
  int64_t lhs, rhs;
  bool taken;
};

void PrintTo(const JumpCase& c, std::ostream* os) { *os << c.jump << " " << c.lhs << " " << c.rhs; }

class JumpTest : public ::testing::TestWithParam<JumpCase> {};

TEST_P(JumpTest, TakesBranchIffConditionHolds) {
  FarHeap heap(kBase, 4096);
  const uint64_t node = heap.Alloc(64);
  const auto& c = GetParam();
  auto program = MustBuild("LOAD data\nMOVE r1, " + std::to_string(c.lhs) + "\nCOMPARE r1, " +
                           std::to_string(c.rhs) + "\n" + c.jump + " yes\nMOVE sp[0], 1\nRETURN\nyes:\nMOVE sp[0], 2\nRETURN");
  ASSERT_NE(program, nullptr);
  auto r = RunBoth(program, {&heap}, StateAt(node));
  ASSERT_EQ(r.outcome.status, TraversalStatus::kDone);
  EXPECT_EQ(SpGet<uint64_t>(r.state, 0), c.taken ? 2u : 1u) << c.jump << " " << c.lhs << " " << c.rhs;
}

INSTANTIATE_TEST_SUITE_P(
    Jumps, JumpTest,
    ::testing::Values(JumpCase{"JUMP_EQ", 3, 3, true}, JumpCase{"JUMP_EQ", 3, 4, false},
                      JumpCase{"JUMP_NE", 3, 4, true}, JumpCase{"JUMP_NEQ", 3, 3, false},
                      JumpCase{"JUMP_LT", -1, 0, true}, JumpCase{"JUMP_LTU", -1, 0, false},
                      JumpCase{"JUMP_GT", 0, -1, true}, JumpCase{"JUMP_GTU", 0, -1, false},
                      JumpCase{"JUMP_LE", 4, 4, true}, JumpCase{"JUMP_LE", 5, 4, false},
                      JumpCase{"JUMP_GE", -5, -5, true}, JumpCase{"JUMP_GE", -6, -5, false},
                      JumpCase{"JUMP_LEU", 4, 5, true}, JumpCase{"JUMP_GEU", -1, 5, true},
                      JumpCase{"JUMP_SET", 6, 2, true}, JumpCase{"JUMP_SET", 6, 1, false},
                      JumpCase{"JUMP", 0, 1, true}));

TEST(Compare, NarrowWidthComparesLowBytesSigned) {
  FarHeap heap(kBase, 4096);
  const uint64_t node = heap.Alloc(64);
  // 0x1_ffffffff vs 0: as 4-byte signed values this is -1 < 0.
  auto program = MustBuild("LOAD data\nMOVE r1, 0x1ffffffff\nCOMPARE.4 r1, 0\nJUMP_LT yes\nMOVE sp[0], 1\nRETURN\nyes:\nMOVE sp[0], 2\nRETURN");
  auto r = RunBoth(program, {&heap}, StateAt(node));
  EXPECT_EQ(SpGet<uint64_t>(r.state, 0), 2u);
}

TEST(Store, WritesFarMemoryAtRegisterPlusOffset) {
  FarHeap heap(kBase, 4096);
  const uint64_t node = heap.Alloc(64);
  const uint64_t target = heap.Alloc(64);
  heap.Put<uint64_t>(node, target);
  auto program = MustBuild("LOAD data\nMOVE r1, data[0]\nSTORE [r1+8], 0xabcdef\nSTORE.2 [r1+16], -1\nRETURN");
  auto r = RunBoth(program, {&heap}, StateAt(node));
  ASSERT_EQ(r.outcome.status, TraversalStatus::kDone);
  EXPECT_EQ(heap.Get<uint64_t>(target + 8), 0xabcdefu);
  EXPECT_EQ(heap.Get<uint64_t>(target + 16), 0xffffu);
}

TEST(Store, ReadOnlyRangeFaults) {
  FarHeap heap(kBase, 4096);
  FarHeap ro(0x90000, 4096, /*owner=*/1, kPermRead);
  const uint64_t node = heap.Alloc(64);
  const uint64_t target = ro.Alloc(64);
  heap.Put<uint64_t>(node, target);
  auto program = MustBuild("LOAD data\nMOVE r1, data[0]\nSTORE [r1+8], 1\nRETURN");
  auto r = RunBoth(program, {&heap, &ro}, StateAt(node));
  EXPECT_EQ(r.outcome.status, TraversalStatus::kFaultProtection);
  EXPECT_EQ(r.outcome.fault_pc, 2u);
  EXPECT_EQ(r.outcome.fault_addr, target + 8);
  EXPECT_EQ(ro.Get<uint64_t>(target + 8), 0u);
}

TEST(Store, OtherTenantsRangeFaultsAndOutsideEveryRangeIsInvalid) {
  FarHeap mine(kBase, 4096, 1);
  FarHeap theirs(0x90000, 4096, 2);
  const uint64_t node = mine.Alloc(64);
  mine.Put<uint64_t>(node, theirs.Alloc(64));
  mine.Put<uint64_t>(node + 8, 0xdead0000);
  auto program = MustBuild("LOAD data\nMOVE r1, data[0]\nSTORE [r1], 1\nRETURN");
  EXPECT_EQ(RunBoth(program, {&mine, &theirs}, StateAt(node)).outcome.status, TraversalStatus::kFaultProtection);
  auto wild = MustBuild("LOAD data\nMOVE r1, data[8]\nSTORE [r1], 1\nRETURN");
  auto r = RunBoth(wild, {&mine, &theirs}, StateAt(node));
  EXPECT_EQ(r.outcome.status, TraversalStatus::kFaultInvalidPointer);
  EXPECT_EQ(r.outcome.fault_addr, 0xdead0000u);
}

TEST(Faults, DivisionByZeroNamesTheInstruction) {
  FarHeap heap(kBase, 4096);
  const uint64_t node = heap.Alloc(64);
  for (const char* op : {"DIV", "SDIV", "MOD", "SMOD"}) {
    auto program = MustBuild(std::string("LOAD data\nMOVE r1, 5\n") + op + " r1, data[8]\nRETURN");
    auto r = RunBoth(program, {&heap}, StateAt(node));
    EXPECT_EQ(r.outcome.status, TraversalStatus::kFaultDivZero) << op;
    EXPECT_EQ(r.outcome.fault_pc, 2u);
  }
}

TEST(Faults, IndexedOperandsOutsideWindowOrScratchPad) {
  FarHeap heap(kBase, 4096);
  const uint64_t node = heap.Alloc(64);
  auto data_oob = MustBuild("LOAD data, 16\nMOVE r1, 9\nMOVE sp[0], data[r1]\nRETURN");
  EXPECT_EQ(RunBoth(data_oob, {&heap}, StateAt(node)).outcome.status, TraversalStatus::kFaultBounds);
  auto sp_oob = MustBuild("LOAD data\nMOVE r1, 60\nMOVE sp[r1], 1\nRETURN");
  EXPECT_EQ(RunBoth(sp_oob, {&heap}, StateAt(node, 64)).outcome.status, TraversalStatus::kFaultBounds);
  auto negative = MustBuild("LOAD data, 16\nMOVE r1, -8\nMOVE sp[0], data[r1]\nRETURN");
  EXPECT_EQ(RunBoth(negative, {&heap}, StateAt(node)).outcome.status, TraversalStatus::kFaultBounds);
}

TEST(Faults, LoadChecksTranslationAndProtection) {
  FarHeap mine(kBase, 4096, 1);
  FarHeap theirs(0x90000, 4096, 2);
  auto program = MustBuild("LOAD data\nMOVE sp[0], data[0]\nRETURN");
  auto r = RunBoth(program, {&mine, &theirs}, StateAt(0x50000));
  EXPECT_EQ(r.outcome.status, TraversalStatus::kNotLocal);
  EXPECT_EQ(r.outcome.fault_addr, 0x50000u);
  EXPECT_EQ(r.state.cur_ptr, 0x50000u);  // state intact for routing elsewhere
  EXPECT_EQ(RunBoth(program, {&mine, &theirs}, StateAt(theirs.base())).outcome.status,
            TraversalStatus::kFaultProtection);
  // A window that runs past the end of its range.
  EXPECT_EQ(RunBoth(program, {&mine}, StateAt(kBase + 4096 - 4)).outcome.status, TraversalStatus::kFaultBounds);
}

TEST(Faults, ScratchPadShorterThanProgramNeedsIsABadRequest) {
  FarHeap heap(kBase, 4096);
  auto program = MustBuild("LOAD data\nMOVE sp[56], 1\nRETURN");
  EXPECT_EQ(RunBoth(program, {&heap}, StateAt(heap.Alloc(8), 32)).outcome.status, TraversalStatus::kFaultBadRequest);
}

// A list of n nodes: node i holds {next, value=i*10}; returns the head.
uint64_t BuildList(FarHeap* heap, int n) {
  uint64_t next = 0;
  for (int i = n - 1; i >= 0; --i) {
    const uint64_t node = heap->Alloc(16);
    heap->Put<uint64_t>(node, next);
    heap->Put<uint64_t>(node + 8, static_cast<uint64_t>(i) * 10);
    next = node;
  }
  return next;
}

constexpr const char* kSumList = testing::kSumListProgram;

TEST(IterationLimit, ContinueCarriesStateAndResumes) {
  FarHeap heap(kBase, 4096);
  const uint64_t head = BuildList(&heap, 10);
  auto program = MustBuild(kSumList);
  TraversalState state = StateAt(head, 8);
  auto r = RunBoth(program, {&heap}, state, /*max_iterations=*/3);
  ASSERT_EQ(r.outcome.status, TraversalStatus::kContinue);
  EXPECT_EQ(r.outcome.iterations, 3u);
  EXPECT_EQ(SpGet<uint64_t>(r.state, 0), 0u + 10 + 20);
  int reissues = 0;
  while (r.outcome.status == TraversalStatus::kContinue) {
    r = RunBoth(program, {&heap}, r.state, 3);
    ++reissues;
  }
  EXPECT_EQ(r.outcome.status, TraversalStatus::kDone);
  EXPECT_EQ(reissues, 3);  // 10 iterations in runs of 3
  EXPECT_EQ(r.state.iterations, 10u);
  EXPECT_EQ(SpGet<uint64_t>(r.state, 0), 450u);
}

TEST(Alloc, TakesPreallocatedRegionsThenStopsAndResumes) {
  FarHeap heap(kBase, 8192);
  const uint64_t head = BuildList(&heap, 4);
  // Each iteration copies its value into a freshly allocated cell and links
  // the cells into a list whose head is kept in sp[0].
  auto program = MustBuild(R"(
      LOAD data
      ALLOC r1, sp[16]
      STORE [r1], data[8]
      MOVE r2, sp[0]
      STORE [r1+8], r2
      MOVE sp[0], r1
      COMPARE data[0], 0
      JUMP_EQ end
      MOVE cur_ptr, data[0]
      NEXT_ITER
    end:
      RETURN)");
  TraversalState state = StateAt(head, 16 + 8 + 8 * 8);
  SpPut<uint64_t>(&state, 16, 2);  // two regions
  const uint64_t cell_a = heap.Alloc(16), cell_b = heap.Alloc(16);
  SpPut<uint64_t>(&state, 24, cell_a);
  SpPut<uint64_t>(&state, 32, cell_b);
  auto r = RunBoth(program, {&heap}, state);
  ASSERT_EQ(r.outcome.status, TraversalStatus::kAllocExhausted);
  EXPECT_EQ(r.outcome.iterations, 2u);
  EXPECT_EQ(r.outcome.fault_pc, 1u);
  EXPECT_EQ(heap.Get<uint64_t>(cell_b), 0u);   // taken first (last in the table)
  EXPECT_EQ(heap.Get<uint64_t>(cell_a), 10u);
  // Refill with two more regions and resume from the returned state.
  const uint64_t cell_c = heap.Alloc(16), cell_d = heap.Alloc(16);
  SpPut<uint64_t>(&r.state, 16, 2);
  SpPut<uint64_t>(&r.state, 24, cell_c);
  SpPut<uint64_t>(&r.state, 32, cell_d);
  r = RunBoth(program, {&heap}, r.state);
  ASSERT_EQ(r.outcome.status, TraversalStatus::kDone);
  // Walk the built list from sp[0]: values 30, 20, 10, 0.
  uint64_t cell = SpGet<uint64_t>(r.state, 0);
  for (uint64_t expect : {30, 20, 10, 0}) {
    ASSERT_NE(cell, 0u);
    EXPECT_EQ(heap.Get<uint64_t>(cell), expect);
    cell = heap.Get<uint64_t>(cell + 8);
  }
  EXPECT_EQ(cell, 0u);
}

}  // namespace
}  // namespace pulse
