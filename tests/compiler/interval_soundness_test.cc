// Soundness of the translator's range analysis (compiler/interval.h,
// compiler/abstract_state.h), randomized: random intervals, concrete values
// sampled inside them, the concrete result computed by the reference BPF
// semantics (BpfReference::Alu / ::Jump), which must lie inside what the
// analysis claims.  Every ALU op the analysis models (64- and 32-bit), every
// conditional jump it decides or refines (64- and 32-bit, both edges), and
// the joins.  Exactness is interval_test.cc's business; this only checks
// that no concrete run escapes the abstraction.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/abstract_state.h"
#include "compiler/bpf_insn.h"
#include "compiler/interval.h"
#include "compiler/bpf_reference.h"

namespace pulse::compiler {
namespace {

using testing::BpfReference;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

bool Contains(Interval i, int64_t v) { return i.lo <= v && v <= i.hi; }
std::string Show(Interval i) { return fmt::format("[{}, {}]", i.lo, i.hi); }

class Sampler {
 public:
  explicit Sampler(uint64_t seed) : rng_(seed) {}

  // An endpoint: often a boundary where analyses go wrong (0, +-1, the
  // 32-bit and 64-bit limits, powers of two and their neighbours), else
  // small, else anything.
  int64_t Point() {
    static constexpr std::array<int64_t, 16> kEdges = {
        0, 1, -1, 2, 7, 8, 0x7fffffff, 0x80000000LL, 0xffffffffLL, 0x100000000LL, -0x80000000LL,
        kMax, kMin, kMax - 1, kMin + 1, 63};
    switch (rng_() % 6) {
      case 0: return kEdges[rng_() % kEdges.size()];
      case 1:  // a neighbour, wrapping around at the 64-bit limits as the machine does
        return static_cast<int64_t>(static_cast<uint64_t>(kEdges[rng_() % kEdges.size()]) + rng_() % 5 - 2);
      case 2: return static_cast<int64_t>(rng_() % 64);
      case 3: return static_cast<int64_t>(rng_() % 2001) - 1000;
      case 4: return static_cast<int64_t>(int64_t{1} << (rng_() % 63)) - static_cast<int64_t>(rng_() % 2);
      default: return static_cast<int64_t>(rng_());
    }
  }
  Interval Range() {
    switch (rng_() % 8) {
      case 0: return Interval::Top();
      case 1: return Interval::Const(Point());
      default: {
        const int64_t a = Point(), b = Point();
        return Interval::Of(std::min(a, b), std::max(a, b));
      }
    }
  }
  // Values of i: both ends, their neighbours, and random ones inside.
  std::vector<int64_t> Inside(Interval i, int randoms) {
    std::vector<int64_t> v = {i.lo, i.hi};
    if (i.lo < i.hi) {
      v.push_back(i.lo + 1);
      v.push_back(i.hi - 1);
    }
    const uint64_t width = static_cast<uint64_t>(i.hi) - static_cast<uint64_t>(i.lo);  // hi - lo
    for (int k = 0; k < randoms; ++k) {
      const uint64_t off = width == UINT64_MAX ? rng_() : rng_() % (width + 1);
      v.push_back(static_cast<int64_t>(static_cast<uint64_t>(i.lo) + off));
    }
    // Zero and +-1 when inside: the divisors and signs that matter.
    for (int64_t special : {int64_t{0}, int64_t{1}, int64_t{-1}})
      if (Contains(i, special)) v.push_back(special);
    return v;
  }

 private:
  std::mt19937_64 rng_;
};

constexpr std::array<uint8_t, 13> kAluOps = {kBpfAdd, kBpfSub, kBpfMul, kBpfDiv, kBpfOr,  kBpfAnd, kBpfLsh,
                                             kBpfRsh, kBpfNeg, kBpfMod, kBpfXor, kBpfMov, kBpfArsh};
constexpr std::array<uint8_t, 11> kJumpOps = {kBpfJeq, kBpfJne,  kBpfJgt,  kBpfJge,  kBpfJlt, kBpfJle,
                                              kBpfJset, kBpfJsgt, kBpfJsge, kBpfJslt, kBpfJsle};

TEST(IntervalSoundness, EveryAluResultLiesInTheAbstractResult) {
  Sampler s(0x19a1);
  for (uint8_t op : kAluOps) {
    for (bool alu32 : {false, true}) {
      for (int trial = 0; trial < 1500; ++trial) {
        const Interval d = s.Range();
        // Shift counts: mostly in range, as compiled code has them.
        const Interval src = (op == kBpfLsh || op == kBpfRsh || op == kBpfArsh) && trial % 2 == 0
                                 ? Interval::Of(0, static_cast<int64_t>(trial % (alu32 ? 32 : 64)))
                                 : s.Range();
        const Interval abstract = AluRange(op, alu32, d, src);
        ASSERT_LE(abstract.lo, abstract.hi) << "empty result for a non-empty input";
        for (int64_t x : s.Inside(d, 4)) {
          for (int64_t y : s.Inside(src, 4)) {
            const auto concrete = BpfReference::Alu(op, alu32, static_cast<uint64_t>(x), static_cast<uint64_t>(y));
            ASSERT_TRUE(concrete.has_value());
            const int64_t r = static_cast<int64_t>(*concrete);
            ASSERT_TRUE(Contains(abstract, r))
                << fmt::format("op {:#x}{}: {} op {} = {} (from {} op {}), outside the analysis' {}", op,
                               alu32 ? " (32-bit)" : "", x, y, r, Show(d), Show(src), Show(abstract));
          }
        }
      }
    }
  }
}

TEST(IntervalSoundness, ExactConstantsAreTheReferenceSemantics) {
  Sampler s(0x19a2);
  for (uint8_t op : kAluOps) {
    for (bool alu32 : {false, true}) {
      for (int trial = 0; trial < 2000; ++trial) {
        const int64_t x = s.Point(), y = trial % 3 == 0 ? 0 : s.Point();
        const auto folded = EvalAlu(op, alu32, x, y);
        if (!folded) {  // only division and remainder by zero are never folded
          ASSERT_TRUE((op == kBpfDiv || op == kBpfMod) && (alu32 ? (y & 0xffffffff) == 0 : y == 0))
              << fmt::format("op {:#x}: {} op {} not folded", op, x, y);
          continue;
        }
        const auto want = BpfReference::Alu(op, alu32, static_cast<uint64_t>(x), static_cast<uint64_t>(y));
        ASSERT_EQ(static_cast<uint64_t>(*folded), *want) << fmt::format("op {:#x}{}: {} op {}", op,
                                                                         alu32 ? " (32-bit)" : "", x, y);
      }
    }
  }
}

TEST(IntervalSoundness, DecidedBranchesGoThatWayForEveryValueAndRefinementKeepsEveryValue) {
  Sampler s(0x19a3);
  int decided = 0, narrowed = 0;
  for (uint8_t op : kJumpOps) {
    for (bool jmp32 : {false, true}) {
      for (int trial = 0; trial < 1000; ++trial) {
        const Interval l = s.Range(), r = s.Range();
        const std::optional<bool> decision = DecideBranch(op, jmp32, l, r);
        decided += decision.has_value();
        Interval lt = l, rt = r, lf = l, rf = r;
        const bool can_take = RefineBranch(op, jmp32, true, &lt, &rt);
        const bool can_fall = RefineBranch(op, jmp32, false, &lf, &rf);
        narrowed += (can_take && (lt != l || rt != r)) + (can_fall && (lf != l || rf != r));
        for (int64_t a : s.Inside(l, 5)) {
          for (int64_t b : s.Inside(r, 5)) {
            const bool taken = *BpfReference::Jump(op, jmp32, static_cast<uint64_t>(a), static_cast<uint64_t>(b));
            auto what = [&] {
              return fmt::format("jump {:#x}{} with {} in {} and {} in {}: {}", op, jmp32 ? " (32-bit)" : "", a,
                                 Show(l), b, Show(r), taken ? "taken" : "falls through");
            };
            if (decision) {
              ASSERT_EQ(*decision, taken) << what() << ", but decided otherwise";
            }
            if (taken) {
              ASSERT_TRUE(can_take) << what() << ", but the taken edge was called impossible";
              ASSERT_TRUE(Contains(lt, a) && Contains(rt, b))
                  << what() << ", but the taken edge narrowed them to " << Show(lt) << " and " << Show(rt);
            } else {
              ASSERT_TRUE(can_fall) << what() << ", but the fall-through edge was called impossible";
              ASSERT_TRUE(Contains(lf, a) && Contains(rf, b))
                  << what() << ", but the fall-through edge narrowed them to " << Show(lf) << " and " << Show(rf);
            }
          }
        }
      }
    }
  }
  // The generator reaches the interesting cases, not only "unknown".
  EXPECT_GT(decided, 1500);
  EXPECT_GT(narrowed, 1500);
}

TEST(IntervalSoundness, JoinsContainBothSides) {
  Sampler s(0x19a4);
  for (int trial = 0; trial < 5000; ++trial) {
    const Interval a = s.Range(), b = s.Range();
    const Interval j = Join(a, b);
    for (int64_t v : s.Inside(a, 3)) ASSERT_TRUE(Contains(j, v)) << Show(a) << " join " << Show(b);
    for (int64_t v : s.Inside(b, 3)) ASSERT_TRUE(Contains(j, v)) << Show(a) << " join " << Show(b);
    // Registers: a scalar joined with a scalar is a scalar over both ranges;
    // any other mix is no longer a usable value of either kind.
    const AbsValue sa = AbsValue::Scalar(a), sb = AbsValue::Scalar(b);
    const AbsValue jv = JoinValue(sa, sb);
    ASSERT_EQ(jv.kind, Kind::kScalar);
    ASSERT_TRUE(Contains(jv.range, a.lo) && Contains(jv.range, a.hi) && Contains(jv.range, b.lo) &&
                Contains(jv.range, b.hi));
    const AbsValue ptr = AbsValue::Pointer(trial % 2 ? Kind::kCtx : Kind::kStack, a.lo);
    ASSERT_EQ(JoinValue(sa, ptr).kind, Kind::kConflict);
    ASSERT_EQ(JoinValue(AbsValue{}, sb).kind, Kind::kUninit);
    // A pointer joined with the same kind keeps the kind and both offsets.
    const AbsValue ptr2 = AbsValue::Pointer(ptr.kind, b.hi);
    const AbsValue jp = JoinValue(ptr, ptr2);
    ASSERT_EQ(jp.kind, ptr.kind);
    ASSERT_TRUE(Contains(jp.range, a.lo) && Contains(jp.range, b.hi));
  }
}

}  // namespace
}  // namespace pulse::compiler
