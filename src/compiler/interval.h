// Value ranges of BPF registers for the translator's static analysis: signed
// 64-bit intervals, the abstract transfer of ALU operations, exact constant
// evaluation, and branch decisions / refinement.  Internal.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace pulse::compiler {

struct Interval {
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();

  static Interval Top() { return {}; }
  static Interval Const(int64_t v) { return {v, v}; }
  static Interval Of(int64_t lo, int64_t hi) { return {lo, hi}; }
  // The values of an unsigned load of `bytes` bytes (1, 2, 4 or 8).
  static Interval Unsigned(int bytes);

  bool is_const() const { return lo == hi; }
  bool is_top() const { return *this == Top(); }
  bool nonneg() const { return lo >= 0; }
  bool within(int64_t a, int64_t b) const { return lo >= a && hi <= b; }
  bool operator==(const Interval&) const = default;
};

Interval Join(Interval a, Interval b);

// Exact result of BPF ALU `op` (BpfAluOp) on constants, as the 64-bit value
// the destination register holds afterwards (32-bit ops zero-extend).
// nullopt for division/remainder by zero and unsupported ops.
std::optional<int64_t> EvalAlu(uint8_t op, bool alu32, int64_t dst, int64_t src);

// Sound over-approximation of the result range of `op` on ranges.
Interval AluRange(uint8_t op, bool alu32, Interval dst, Interval src);

// The outcome of conditional jump `op` (BpfJmpOp) if it is the same for all
// values in the ranges.
std::optional<bool> DecideBranch(uint8_t op, bool jmp32, Interval lhs, Interval rhs);

// Narrows lhs/rhs to the values for which the branch goes `taken` (true) or
// falls through (false).  Returns false if no value can go that way.
bool RefineBranch(uint8_t op, bool jmp32, bool taken, Interval* lhs, Interval* rhs);

}  // namespace pulse::compiler
