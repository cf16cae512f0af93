// Translation and protection of one far-memory access: the memory
// pipeline's check, shared by the reference interpreter and the engine.
#pragma once

#include <cstdint>

#include "pulse/memory.h"
#include "pulse/traversal.h"

namespace pulse {

// Checks that `tenant` may access [addr, addr+len) with `perm` in `range`
// (the range Find(addr) returned; nullptr when no local range holds addr).
// Returns kDone when the access is allowed, else the status to report.
inline TraversalStatus CheckAccess(const Range* range, TenantId tenant, uint8_t perm, uint64_t addr,
                                   uint64_t len, TraversalStatus not_found_status) {
  if (range == nullptr) return not_found_status;
  if (range->owner != tenant || (range->perms & perm) != perm) return TraversalStatus::kFaultProtection;
  if (!range->ContainsSpan(addr, len)) return TraversalStatus::kFaultBounds;
  return TraversalStatus::kDone;
}

}  // namespace pulse
