#include "compiler/interval.h"

#include <algorithm>
#include <optional>
#include <type_traits>

#include "compiler/bpf_insn.h"

namespace pulse::compiler {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kU32Max = 0xffffffffLL;

const Interval kU32 = Interval::Of(0, kU32Max);

// Smallest 2^k - 1 >= x (x >= 0).
int64_t BitMask(int64_t x) {
  int64_t m = 0;
  while (m < x) m = (m << 1) | 1;
  return m;
}

std::optional<int64_t> Add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> Sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> Mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

Interval Range64(uint8_t op, Interval d, Interval s) {
  switch (op) {
    case kBpfMov:
      return s;
    case kBpfAdd: {
      auto lo = Add(d.lo, s.lo), hi = Add(d.hi, s.hi);
      if (lo && hi) return {*lo, *hi};
      return Interval::Top();
    }
    case kBpfSub: {
      auto lo = Sub(d.lo, s.hi), hi = Sub(d.hi, s.lo);
      if (lo && hi) return {*lo, *hi};
      return Interval::Top();
    }
    case kBpfMul: {
      auto a = Mul(d.lo, s.lo), b = Mul(d.lo, s.hi), c = Mul(d.hi, s.lo), e = Mul(d.hi, s.hi);
      if (!a || !b || !c || !e) return Interval::Top();
      return {std::min({*a, *b, *c, *e}), std::max({*a, *b, *c, *e})};
    }
    case kBpfDiv:
      if (d.nonneg() && s.lo > 0) return {d.lo / s.hi, d.hi / s.lo};
      return Interval::Top();
    case kBpfMod:
      if (s.lo > 0) return {0, d.nonneg() ? std::min(d.hi, s.hi - 1) : s.hi - 1};
      return Interval::Top();
    case kBpfAnd:
      if (d.nonneg() && s.nonneg()) return {0, std::min(d.hi, s.hi)};
      if (d.nonneg()) return {0, d.hi};
      if (s.nonneg()) return {0, s.hi};
      return Interval::Top();
    case kBpfOr:  // x | y <= (bits of x) | (bits of y), or | c for a constant c
      if (d.nonneg() && s.nonneg())
        return {std::max(d.lo, s.lo), (d.is_const() ? d.hi : BitMask(d.hi)) |
                                          (s.is_const() ? s.hi : BitMask(s.hi))};
      return Interval::Top();
    case kBpfXor:
      if (d.nonneg() && s.nonneg())
        return {0, (d.is_const() ? d.hi : BitMask(d.hi)) | (s.is_const() ? s.hi : BitMask(s.hi))};
      return Interval::Top();
    case kBpfLsh:
      if (s.is_const() && s.lo >= 0 && s.lo < 64) {
        const int k = static_cast<int>(s.lo);
        if (d.nonneg() && d.hi <= (kMax >> k)) return {d.lo << k, d.hi << k};
      }
      if (d == Interval::Const(0)) return d;
      return Interval::Top();
    case kBpfRsh:
      if (s.is_const() && s.lo >= 0 && s.lo < 64) {
        const int k = static_cast<int>(s.lo);
        if (d.nonneg()) return {d.lo >> k, d.hi >> k};
        if (k >= 1) return {0, static_cast<int64_t>(~uint64_t{0} >> k)};
        return d;
      }
      if (d.nonneg()) return {0, d.hi};
      return Interval::Top();
    case kBpfArsh:
      if (s.is_const() && s.lo >= 0 && s.lo < 64) {
        const int k = static_cast<int>(s.lo);
        return {d.lo >> k, d.hi >> k};
      }
      return {std::min<int64_t>(d.lo, 0), std::max<int64_t>(d.hi, 0)};
    case kBpfNeg:
      if (d.lo > kMin) return {-d.hi, -d.lo};
      return Interval::Top();
    default:
      return Interval::Top();
  }
}

enum class Rel { kNone, kEq, kNe, kGt, kGe, kLt, kLe };

struct Pred {
  Rel rel = Rel::kNone;
  bool is_signed = false;
};

Pred PredOf(uint8_t op) {
  switch (op) {
    case kBpfJeq: return {Rel::kEq, false};
    case kBpfJne: return {Rel::kNe, false};
    case kBpfJgt: return {Rel::kGt, false};
    case kBpfJge: return {Rel::kGe, false};
    case kBpfJlt: return {Rel::kLt, false};
    case kBpfJle: return {Rel::kLe, false};
    case kBpfJsgt: return {Rel::kGt, true};
    case kBpfJsge: return {Rel::kGe, true};
    case kBpfJslt: return {Rel::kLt, true};
    case kBpfJsle: return {Rel::kLe, true};
    default: return {};
  }
}

Rel Negate(Rel r) {
  switch (r) {
    case Rel::kEq: return Rel::kNe;
    case Rel::kNe: return Rel::kEq;
    case Rel::kGt: return Rel::kLe;
    case Rel::kGe: return Rel::kLt;
    case Rel::kLt: return Rel::kGe;
    case Rel::kLe: return Rel::kGt;
    default: return Rel::kNone;
  }
}

// True if comparisons of these ranges under this predicate behave like
// signed 64-bit comparisons of the values.
bool Comparable(const Pred& p, bool jmp32, Interval l, Interval r) {
  if (jmp32) return l.within(0, 0x7fffffff) && r.within(0, 0x7fffffff);
  if (p.is_signed || p.rel == Rel::kEq || p.rel == Rel::kNe) return true;
  return l.nonneg() && r.nonneg();
}

bool EvalConst(uint8_t op, bool jmp32, int64_t a, int64_t b) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  int64_t sa = a, sb = b;
  if (jmp32) {
    ua &= 0xffffffffu;
    ub &= 0xffffffffu;
    sa = static_cast<int32_t>(static_cast<uint32_t>(ua));
    sb = static_cast<int32_t>(static_cast<uint32_t>(ub));
  }
  switch (op) {
    case kBpfJeq: return ua == ub;
    case kBpfJne: return ua != ub;
    case kBpfJgt: return ua > ub;
    case kBpfJge: return ua >= ub;
    case kBpfJlt: return ua < ub;
    case kBpfJle: return ua <= ub;
    case kBpfJsgt: return sa > sb;
    case kBpfJsge: return sa >= sb;
    case kBpfJslt: return sa < sb;
    case kBpfJsle: return sa <= sb;
    case kBpfJset: return (ua & ub) != 0;
    default: return false;
  }
}

}  // namespace

Interval Interval::Unsigned(int bytes) {
  if (bytes >= 8) return Top();
  return {0, static_cast<int64_t>((uint64_t{1} << (8 * bytes)) - 1)};
}

Interval Join(Interval a, Interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

namespace {

// One BPF ALU operation at the width of U (uint32_t for the 32-bit ops,
// uint64_t otherwise): unsigned wrap-around, shift counts masked to the
// width, arithmetic shift on the signed view.  Nothing for a division by
// zero (BPF defines it; the translator never folds it) or an unknown op.
template <typename U>
std::optional<U> EvalAluAt(uint8_t op, U a, U b) {
  using S = std::make_signed_t<U>;
  constexpr U kShiftMask = sizeof(U) * 8 - 1;
  switch (op) {
    case kBpfAdd: return static_cast<U>(a + b);
    case kBpfSub: return static_cast<U>(a - b);
    case kBpfMul: return static_cast<U>(a * b);
    case kBpfDiv: if (b == 0) return std::nullopt; return static_cast<U>(a / b);
    case kBpfMod: if (b == 0) return std::nullopt; return static_cast<U>(a % b);
    case kBpfOr: return static_cast<U>(a | b);
    case kBpfAnd: return static_cast<U>(a & b);
    case kBpfXor: return static_cast<U>(a ^ b);
    case kBpfLsh: return static_cast<U>(a << (b & kShiftMask));
    case kBpfRsh: return static_cast<U>(a >> (b & kShiftMask));
    case kBpfArsh: return static_cast<U>(static_cast<S>(a) >> (b & kShiftMask));
    case kBpfNeg: return static_cast<U>(U{0} - a);
    case kBpfMov: return b;
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<int64_t> EvalAlu(uint8_t op, bool alu32, int64_t dst, int64_t src) {
  if (alu32) {
    // The 32-bit result is zero-extended into the 64-bit register.
    auto r = EvalAluAt<uint32_t>(op, static_cast<uint32_t>(dst), static_cast<uint32_t>(src));
    if (!r) return std::nullopt;
    return static_cast<int64_t>(uint64_t{*r});
  }
  auto r = EvalAluAt<uint64_t>(op, static_cast<uint64_t>(dst), static_cast<uint64_t>(src));
  if (!r) return std::nullopt;
  return static_cast<int64_t>(*r);
}

Interval AluRange(uint8_t op, bool alu32, Interval dst, Interval src) {
  if (dst.is_const() && src.is_const()) {
    if (auto v = EvalAlu(op, alu32, dst.lo, src.lo)) return Interval::Const(*v);
  }
  if (op == kBpfMov && !alu32) return src;
  if (!alu32) return Range64(op, dst, src);
  if (op == kBpfMov) return src.within(0, kU32Max) ? src : kU32;
  if (!dst.within(0, kU32Max) || !src.within(0, kU32Max)) return kU32;
  if (op == kBpfArsh && !dst.within(0, 0x7fffffff)) return kU32;
  if ((op == kBpfLsh || op == kBpfRsh || op == kBpfArsh) && !src.within(0, 31)) return kU32;
  const Interval r = Range64(op, dst, src);
  return r.within(0, kU32Max) ? r : kU32;
}

std::optional<bool> DecideBranch(uint8_t op, bool jmp32, Interval l, Interval r) {
  if (l.is_const() && r.is_const()) return EvalConst(op, jmp32, l.lo, r.lo);
  const Pred p = PredOf(op);
  if (p.rel == Rel::kNone || !Comparable(p, jmp32, l, r)) return std::nullopt;
  switch (p.rel) {
    case Rel::kEq:
      if (l.hi < r.lo || r.hi < l.lo) return false;
      return std::nullopt;
    case Rel::kNe:
      if (l.hi < r.lo || r.hi < l.lo) return true;
      return std::nullopt;
    case Rel::kGt:
      if (l.lo > r.hi) return true;
      if (l.hi <= r.lo) return false;
      return std::nullopt;
    case Rel::kGe:
      if (l.lo >= r.hi) return true;
      if (l.hi < r.lo) return false;
      return std::nullopt;
    case Rel::kLt:
      if (l.hi < r.lo) return true;
      if (l.lo >= r.hi) return false;
      return std::nullopt;
    case Rel::kLe:
      if (l.hi <= r.lo) return true;
      if (l.lo > r.hi) return false;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

bool RefineBranch(uint8_t op, bool jmp32, bool taken, Interval* l, Interval* r) {
  if (auto d = DecideBranch(op, jmp32, *l, *r)) return *d == taken;
  Pred p = PredOf(op);
  if (p.rel == Rel::kNone) return true;
  const Rel rel = taken ? p.rel : Negate(p.rel);
  Interval x = *l, y = *r;
  if (!Comparable(p, jmp32, *l, *r)) {
    // An unsigned upper bound still bounds a value of unknown sign:
    // x <=u y with 0 <= y means 0 <= x <= y.
    if (jmp32 || p.is_signed) return true;
    auto bound_above = [](Interval* v, int64_t limit) {
      v->lo = std::max<int64_t>(v->lo, 0);
      v->hi = std::min(v->hi, limit);
    };
    if ((rel == Rel::kLt || rel == Rel::kLe) && y.nonneg()) {
      if (rel == Rel::kLt && y.hi == 0) return false;
      bound_above(&x, rel == Rel::kLt ? y.hi - 1 : y.hi);
    } else if ((rel == Rel::kGt || rel == Rel::kGe) && x.nonneg()) {
      if (rel == Rel::kGt && x.hi == 0) return false;
      bound_above(&y, rel == Rel::kGt ? x.hi - 1 : x.hi);
    } else {
      return true;
    }
    if (x.lo > x.hi || y.lo > y.hi) return false;
    *l = x;
    *r = y;
    return true;
  }
  switch (rel) {
    case Rel::kEq:
      x.lo = y.lo = std::max(x.lo, y.lo);
      x.hi = y.hi = std::min(x.hi, y.hi);
      break;
    case Rel::kNe:
      if (y.is_const()) {
        if (x.lo == y.lo) ++x.lo;  // x.lo < kMax here, else x would be const
        else if (x.hi == y.lo) --x.hi;
      } else if (x.is_const()) {
        if (y.lo == x.lo) ++y.lo;
        else if (y.hi == x.lo) --y.hi;
      }
      break;
    case Rel::kLt:  // x < y
      if (y.hi == kMin || x.lo == kMax) return false;
      x.hi = std::min(x.hi, y.hi - 1);
      y.lo = std::max(y.lo, x.lo + 1);
      break;
    case Rel::kLe:
      x.hi = std::min(x.hi, y.hi);
      y.lo = std::max(y.lo, x.lo);
      break;
    case Rel::kGt:  // y < x
      if (x.hi == kMin || y.lo == kMax) return false;
      y.hi = std::min(y.hi, x.hi - 1);
      x.lo = std::max(x.lo, y.lo + 1);
      break;
    case Rel::kGe:
      y.hi = std::min(y.hi, x.hi);
      x.lo = std::max(x.lo, y.lo);
      break;
    default:
      break;
  }
  if (x.lo > x.hi || y.lo > y.hi) return false;
  *l = x;
  *r = y;
  return true;
}

}  // namespace pulse::compiler
