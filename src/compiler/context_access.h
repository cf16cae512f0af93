// Where a BPF load or store goes, from the abstract value of its base
// register: cur_ptr, the node window (data[off] / data[rN+off]), the scratch
// pad (sp[off] / sp[rN+off]), a stack slot (placed in the scratch pad at
// link time), or far memory (STORE [rN+off]).  Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/abstract_state.h"
#include "pulse/isa.h"

namespace pulse::compiler {

// The context layout of pulse/iterator.h's struct pulse_ctx: cur_ptr, the
// node window, a guard (so that node offsets beyond the window are told
// apart from the scratch pad), the scratch pad.
inline constexpr int64_t kCtxCurPtr = 0;
inline constexpr int64_t kCtxData = 8;
inline constexpr int64_t kCtxDataEnd = kCtxData + isa::kMaxWindowBytes;
inline constexpr int64_t kCtxScratch = 16384;

// A resolved memory access.
struct Access {
  enum class Where { kCurPtr, kData, kSp, kStack, kFar } where = Where::kFar;
  isa::Operand op;
  uint32_t data_extent = 0;
  uint32_t scratch_extent = 0;
  bool scratch_unbounded = false;
  int64_t stack_low = 0;   // the stack bytes it may touch: frame offsets [stack_low, stack_high)
  int64_t stack_high = 0;
  std::optional<int64_t> stack_slot;  // a constant frame offset
};

// Resolves a `width`-byte access at (register `base`, holding v) + off.
// Returns nullopt with *error set if the access is not allowed; may set
// *warning (an index whose range is unknown).
std::optional<Access> ResolveAccess(const AbsValue& v, int base, int16_t off, int width,
                                    bool is_store, uint32_t scratch_pad_bytes, std::string* error,
                                    std::string* warning);

}  // namespace pulse::compiler
