// The range analysis behind window inference and constant folding.
#include <gtest/gtest.h>

#include "compiler/bpf_insn.h"
#include "compiler/interval.h"

namespace pulse::compiler {
namespace {

TEST(Interval, ExactConstants) {
  EXPECT_EQ(EvalAlu(kBpfAdd, false, 5, -7), -2);
  EXPECT_EQ(EvalAlu(kBpfAdd, true, 0xffffffff, 1), 0);               // 32-bit wraps, zero-extends
  EXPECT_EQ(EvalAlu(kBpfMov, true, 0, -1), 0xffffffffLL);
  EXPECT_EQ(EvalAlu(kBpfArsh, false, -16, 2), -4);
  EXPECT_EQ(EvalAlu(kBpfArsh, true, 0x80000000LL, 4), 0xf8000000LL);
  EXPECT_EQ(EvalAlu(kBpfLsh, false, 1, 65), 2);                       // count mod 64
  EXPECT_EQ(EvalAlu(kBpfDiv, false, 7, 0), std::nullopt);             // never folded
  EXPECT_EQ(EvalAlu(kBpfRsh, false, -1, 60), 15);
}

TEST(Interval, AluRanges) {
  const Interval i = Interval::Of(0, 15);
  EXPECT_EQ(AluRange(kBpfLsh, false, i, Interval::Const(3)), Interval::Of(0, 120));
  EXPECT_EQ(AluRange(kBpfAdd, false, Interval::Of(0, 120), Interval::Const(136)), Interval::Of(136, 256));
  EXPECT_EQ(AluRange(kBpfAnd, false, Interval::Top(), Interval::Const(15)), Interval::Of(0, 15));
  EXPECT_EQ(AluRange(kBpfMod, false, Interval::Top(), Interval::Const(10)), Interval::Of(0, 9));
  EXPECT_EQ(AluRange(kBpfAdd, false, Interval::Top(), Interval::Const(1)), Interval::Top());
  EXPECT_EQ(AluRange(kBpfSub, true, Interval::Of(0, 3), Interval::Const(5)), Interval::Unsigned(4));
  EXPECT_EQ(Interval::Unsigned(1), Interval::Of(0, 255));
  EXPECT_EQ(AluRange(kBpfLsh, false, Interval::Of(0, 1LL << 62), Interval::Const(2)), Interval::Top());
}

TEST(Interval, BranchDecisions) {
  EXPECT_EQ(DecideBranch(kBpfJgt, false, Interval::Of(0, 15), Interval::Const(15)), false);
  EXPECT_EQ(DecideBranch(kBpfJlt, false, Interval::Of(0, 15), Interval::Const(16)), true);
  EXPECT_EQ(DecideBranch(kBpfJeq, false, Interval::Of(0, 3), Interval::Of(5, 9)), false);
  EXPECT_EQ(DecideBranch(kBpfJgt, false, Interval::Top(), Interval::Const(3)), std::nullopt);
  EXPECT_EQ(DecideBranch(kBpfJsgt, false, Interval::Const(-1), Interval::Const(0)), false);
  EXPECT_EQ(DecideBranch(kBpfJgt, false, Interval::Const(-1), Interval::Const(0)), true);  // unsigned
  EXPECT_EQ(DecideBranch(kBpfJeq, true, Interval::Const(0x100000001LL), Interval::Const(1)), true);
}

TEST(Interval, BranchRefinement) {
  Interval x = Interval::Top(), k = Interval::Const(7);
  // if (x > 7) goto ...: falling through means x <= 7 unsigned.
  ASSERT_TRUE(RefineBranch(kBpfJgt, false, false, &x, &k));
  EXPECT_EQ(x, Interval::Of(0, 7));
  x = Interval::Of(0, 100);
  ASSERT_TRUE(RefineBranch(kBpfJgt, false, true, &x, &k));
  EXPECT_EQ(x, Interval::Of(8, 100));
  x = Interval::Of(3, 3);
  Interval y = Interval::Of(0, 10);
  ASSERT_TRUE(RefineBranch(kBpfJne, false, false, &y, &x));  // y == 3
  EXPECT_EQ(y, Interval::Const(3));
  x = Interval::Of(0, 5);
  Interval nine = Interval::Const(9);
  EXPECT_FALSE(RefineBranch(kBpfJgt, false, true, &x, &nine));  // impossible edge
  x = Interval::Top();
  ASSERT_TRUE(RefineBranch(kBpfJlt, true, true, &x, &k));  // 32-bit: upper bits unknown
  EXPECT_EQ(x, Interval::Top());
}

}  // namespace
}  // namespace pulse::compiler
