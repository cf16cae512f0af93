#include "pulse/typed_traversal.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace pulse {

Result<ProgramRef> LoadEmbeddedProgram(std::span<const uint8_t> bytes, std::string_view name) {
  auto p = VerifiedProgram::FromBytes(bytes);
  if (!p.ok()) return Status::Internal(fmt::format("iterator {}: {}", name, p.status().ToString()));
  return ProgramRef(*p);
}

Status RunTraversalBytes(Client& client, const ProgramRef& program, uint64_t cur_ptr, void* state,
                         size_t state_bytes, const TraverseOptions& options, std::string_view what) {
  std::vector<uint8_t> scratch(std::max<size_t>(state_bytes, program->info().scratch_bytes), 0);
  std::memcpy(scratch.data(), state, state_bytes);
  PULSE_ASSIGN_OR_RETURN(TraversalResult r, client.Traverse(program, cur_ptr, std::move(scratch), options));
  PULSE_RETURN_IF_ERROR(TraversalStatusError(r.status, what, r.fault_addr, r.fault_pc));
  if (r.scratch.size() < state_bytes) {
    return Status::Internal(fmt::format("{}: scratch pad of {} bytes returned, {} expected", what,
                                        r.scratch.size(), state_bytes));
  }
  std::memcpy(state, r.scratch.data(), state_bytes);
  return Status::Ok();
}

}  // namespace pulse
