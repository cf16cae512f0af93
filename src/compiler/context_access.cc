#include "compiler/context_access.h"

#include <fmt/format.h>

namespace pulse::compiler {
namespace {

using isa::Operand;

std::optional<Access> ResolveCtx(const AbsValue& v, int base, int16_t off, int width, bool is_store,
                               uint32_t scratch_pad_bytes, std::string* error,
                               std::string* warning) {
  auto Fail = [&](std::string m) { *error = std::move(m); };
  auto Warn = [&](std::string m) { *warning = std::move(m); };
  const int64_t sp_end = kCtxScratch + scratch_pad_bytes;
  Access a;
  if (v.range.is_const()) {
    const int64_t k = v.range.lo + off;
    if (k == kCtxCurPtr && (width == 8 || width == 4)) {
      if (is_store) {
        Fail("assigns cur_ptr: only next()'s return value sets cur_ptr");
        return std::nullopt;
      }
      a.where = Access::Where::kCurPtr;
      a.op = Operand::CurPtr();
      return a;
    }
    if (k >= kCtxData && k + width <= kCtxDataEnd) {
      if (is_store) {
        Fail(fmt::format("writes node byte {} in the window: the window is a read-only "
                         "copy of the node; write the node in far memory with "
                         "pulse_store_u{}(cur_addr + {}, value)",
                         k - kCtxData, width * 8, k - kCtxData));
        return std::nullopt;
      }
      a.where = Access::Where::kData;
      a.op = Operand::Data(k - kCtxData);
      a.data_extent = static_cast<uint32_t>(k - kCtxData + width);
      return a;
    }
    if (k >= kCtxScratch && k + width <= sp_end) {
      a.where = Access::Where::kSp;
      a.op = Operand::Sp(k - kCtxScratch);
      a.scratch_extent = static_cast<uint32_t>(k - kCtxScratch + width);
      return a;
    }
    if (k < 0) {
      Fail(fmt::format("accesses memory {} bytes before the context", -k));
    } else if (k < kCtxData) {
      Fail(fmt::format("accesses bytes [{}, {}) of cur_ptr: cur_ptr can only be read "
                       "whole (cur_addr)",
                       k, k + width));
    } else if (k < kCtxScratch) {
      Fail(fmt::format("{} node bytes [{}, {}), beyond the {}-byte node window (one "
                       "iteration loads at most {} bytes of the node)",
                       is_store ? "writes" : "reads", k - kCtxData, k - kCtxData + width,
                       isa::kMaxWindowBytes, isa::kMaxWindowBytes));
    } else {
      Fail(fmt::format("accesses scratch pad bytes [{}, {}), beyond the {}-byte scratch "
                       "pad",
                       k - kCtxScratch, k - kCtxScratch + width,
                       scratch_pad_bytes));
    }
    return std::nullopt;
  }
  // A register-indexed access.
  int64_t lo = 0, hi = 0;
  const bool bounded = !v.range.is_top() && !__builtin_add_overflow(v.range.lo, off, &lo) &&
                       !__builtin_add_overflow(v.range.hi, off + width, &hi);
  auto data_op = [&](uint32_t extent) -> std::optional<Access> {
    if (is_store) {
      Fail("writes the node window through an index: the window is a read-only copy "
                  "of the node; write the node in far memory with pulse_store_*(cur_addr + "
                  "offset, value)");
      return std::nullopt;
    }
    a.where = Access::Where::kData;
    a.op = Operand::DataIdx(base, off - kCtxData);
    a.data_extent = extent;
    return a;
  };
  if (bounded && lo >= kCtxData && hi <= kCtxDataEnd)
    return data_op(static_cast<uint32_t>(hi - kCtxData));
  if (bounded && lo >= kCtxScratch && hi <= sp_end) {
    a.where = Access::Where::kSp;
    a.op = Operand::SpIdx(base, off - kCtxScratch);
    a.scratch_extent = static_cast<uint32_t>(hi - kCtxScratch);
    return a;
  }
  // Not provably inside one part: go by the array base.
  std::optional<int64_t> at;
  if (auto anchor = v.Anchor()) at = *anchor + off;
  else if (bounded) at = lo;
  const std::string range =
      v.range.is_top() ? "unknown" : fmt::format("[{}, {}]", v.range.lo, v.range.hi);
  if (at && *at >= kCtxData && *at < kCtxDataEnd) {
    if (!is_store)
      Warn(fmt::format("the index in r{} (context offsets {}) is not known to stay "
                       "inside the node window; the window is extended to {} bytes "
                       "and an index outside it faults at run time (bound the index, "
                       "e.g. `i & 15` or `if (i < 16)`, to load less)",
                       base, range, isa::kMaxWindowBytes));
    return data_op(isa::kMaxWindowBytes);
  }
  if (at && *at >= kCtxScratch && *at < sp_end) {
    a.where = Access::Where::kSp;
    a.op = Operand::SpIdx(base, off - kCtxScratch);
    a.scratch_extent = scratch_pad_bytes;
    a.scratch_unbounded = true;
    return a;
  }
  Fail(fmt::format("cannot tell which part of the context r{}{:+} points into (context "
                   "offsets {}); bound the index, e.g. `i & 15` or `if (i < 16)`",
                   base, int{off}, range));
  return std::nullopt;
}

std::optional<Access> ResolveStack(const AbsValue& v, int base, int16_t off, int width,
                                 std::string* error) {
  auto Fail = [&](std::string m) { *error = std::move(m); };
  int64_t lo = 0, hi = 0;
  const bool bounded = !v.range.is_top() && !__builtin_add_overflow(v.range.lo, off, &lo) &&
                       !__builtin_add_overflow(v.range.hi, off + width, &hi);
  if (!bounded || lo < -kBpfStackBytes || hi > 0) {
    Fail(fmt::format("accesses the stack outside the function's frame (frame offsets "
                     "{}); bound the index of local arrays",
                            v.range.is_top() ? "unknown"
                                             : fmt::format("[{}, {}]", v.range.lo + off,
                                                           v.range.hi + off + width)));
    return std::nullopt;
  }
  Access a;
  a.where = Access::Where::kStack;
  a.stack_low = lo;
  a.stack_high = hi;
  if (v.range.is_const()) {
    a.op = Operand::Sp(lo);
    a.stack_slot = lo;
  } else {
    a.op = Operand::SpIdx(base, off);
  }
  return a;
}

}  // namespace

std::optional<Access> ResolveAccess(const AbsValue& v, int base, int16_t off, int width,
                                  bool is_store, uint32_t scratch_pad_bytes, std::string* error,
                                  std::string* warning) {
  auto Fail = [&](std::string m) { *error = std::move(m); };
  switch (v.kind) {
    case Kind::kUninit:
      Fail(fmt::format("uses r{} as a pointer before it is written on some path", base));
      return std::nullopt;
    case Kind::kConflict:
      Fail(fmt::format("r{} points into the context on one path and elsewhere on "
                       "another",
                       base));
      return std::nullopt;
    case Kind::kScalar:
      if (is_store) {
        Access a;
        a.where = Access::Where::kFar;
        a.op = Operand::Mem(base, off);
        return a;
      }
      Fail(fmt::format(
                      "reads far memory through r{}, a pointer that is not the node at "
                      "cur_ptr: an iteration can only read the node it loaded (return the "
                      "pointer from next() to visit that node)",
                      base));
      return std::nullopt;
    case Kind::kCtx:
      return ResolveCtx(v, base, off, width, is_store, scratch_pad_bytes, error, warning);
    case Kind::kStack:
      return ResolveStack(v, base, off, width, error);
  }
  return std::nullopt;
}

}  // namespace pulse::compiler
