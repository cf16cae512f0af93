// Field-by-field equality of traversal messages, for the message fuzz targets.
#pragma once

#include "pulse/protocol.h"

namespace pulse::fuzz {

// Equal in every field that travels; kFlagHasProgram is implied by the
// program and ignored.
inline bool SameMessage(const TraversalMessage& a, const TraversalMessage& b) {
  return a.kind == b.kind && a.status == b.status && a.request_id == b.request_id && a.cpu_node == b.cpu_node &&
         a.tenant == b.tenant && a.program_hash == b.program_hash && a.max_iterations == b.max_iterations &&
         a.iterations == b.iterations && a.cur_ptr == b.cur_ptr && a.fault_pc == b.fault_pc &&
         a.fault_addr == b.fault_addr && a.program == b.program && a.scratch == b.scratch &&
         (a.flags & ~kFlagHasProgram) == (b.flags & ~kFlagHasProgram);
}

}  // namespace pulse::fuzz
