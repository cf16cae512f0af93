// The translator's abstract domain: what each BPF register (and each 8-byte
// stack slot) may hold at a program point.  Internal.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "compiler/bpf_insn.h"
#include "compiler/interval.h"

namespace pulse::compiler {

// What a BPF register holds.  For kCtx / kStack the pulse register holds the
// offset into the context / from the frame pointer, and `range` is the range
// of that offset.  kUninit: not written on some path; kConflict: a pointer on
// one path and something else on another.
enum class Kind : uint8_t { kUninit, kScalar, kCtx, kStack, kConflict };

struct AbsValue {
  Kind kind = Kind::kUninit;
  Interval range;
  // For pointers whose offset range is not a constant: the offset before a
  // non-constant index was added (the array base), used to tell which part
  // of the context an unbounded index points into.
  bool has_anchor = false;
  int64_t anchor = 0;

  static AbsValue Scalar(Interval r) { return {Kind::kScalar, r, false, 0}; }
  static AbsValue Pointer(Kind k, int64_t offset) { return {k, Interval::Const(offset), false, 0}; }
  bool is_ptr() const { return kind == Kind::kCtx || kind == Kind::kStack; }
  std::optional<int64_t> Anchor() const {
    if (range.is_const()) return range.lo;
    if (has_anchor) return anchor;
    return std::nullopt;
  }
  bool operator==(const AbsValue&) const = default;
};

struct AbsState {
  std::array<AbsValue, kBpfNumRegisters> r;
  std::map<int64_t, AbsValue> slots;  // 8-byte stack slots by frame offset
  // Frame offsets of 8-byte slots that may hold (bytes of) a spilled context
  // or stack pointer on some path.  Such a pointer is an offset in pulse and
  // an address in BPF, so its bytes may only come back whole, as the pointer
  // (see `slots`), never as a number.
  std::set<int64_t> pointer_spills;
  bool operator==(const AbsState&) const = default;
};

// The least upper bounds (at control-flow joins).
AbsValue JoinValue(const AbsValue& a, const AbsValue& b);
AbsState JoinState(const AbsState& a, const AbsState& b);

// "the context" / "the stack", for diagnostics.
const char* PtrName(Kind k);

}  // namespace pulse::compiler
