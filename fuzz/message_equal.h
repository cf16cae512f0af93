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
         a.routing_version == b.routing_version && a.legs == b.legs &&
         a.fault_addr == b.fault_addr && a.program == b.program && a.scratch == b.scratch &&
         (a.flags & ~kFlagHasProgram) == (b.flags & ~kFlagHasProgram);
}

// The same answer from a memory node: SameMessage, except that the program's
// code may travel in one and not the other (a continuation carries it only
// on its first visit to a node, its hash after that; hashes must match and
// codes that both carry must be equal).
inline bool SameAnswer(const TraversalMessage& a, const TraversalMessage& b) {
  if (a.program.empty() == b.program.empty()) return SameMessage(a, b);
  TraversalMessage x = a, y = b;
  x.program.clear();
  y.program.clear();
  return SameMessage(x, y);
}

}  // namespace pulse::fuzz
