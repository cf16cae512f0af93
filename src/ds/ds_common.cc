#include "ds/ds_common.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "pulse/assembler.h"

namespace pulse::ds::internal {

Result<ProgramRef> LoadProgram(std::span<const uint8_t> bytes, std::string_view name) {
  auto p = VerifiedProgram::FromBytes(bytes);
  if (!p.ok()) {
    return Status::Internal(fmt::format("iterator {}: {}", name, p.status().ToString()));
  }
  return ProgramRef(*p);
}

Result<ProgramRef> LoadAssembly(std::string_view text, std::string_view name) {
  auto insns = Assemble(text);
  if (!insns.ok()) {
    return Status::Internal(fmt::format("iterator {}: {}", name, insns.status().ToString()));
  }
  auto p = VerifiedProgram::Create(std::move(*insns));
  if (!p.ok()) {
    return Status::Internal(fmt::format("iterator {}: {}", name, p.status().ToString()));
  }
  return ProgramRef(*p);
}

Status RunTraversalBytes(Client* client, const ProgramRef& program, uint64_t cur_ptr,
                         void* state, size_t state_bytes, std::optional<ExecutionMode> mode,
                         std::string_view what) {
  std::vector<uint8_t> scratch(std::max<size_t>(state_bytes, program->info().scratch_bytes), 0);
  std::memcpy(scratch.data(), state, state_bytes);
  TraverseOptions options;
  options.mode = mode;
  auto r = client->Traverse(program, cur_ptr, std::move(scratch), options);
  if (!r.ok()) return r.status();
  PULSE_RETURN_IF_ERROR(TraversalStatusError(r->status, what, r->fault_addr, r->fault_pc));
  if (r->scratch.size() < state_bytes) {
    return Status::Internal(fmt::format("{}: scratch pad of {} bytes returned, {} expected", what,
                                        r->scratch.size(), state_bytes));
  }
  std::memcpy(state, r->scratch.data(), state_bytes);
  return Status::Ok();
}

}  // namespace pulse::ds::internal
