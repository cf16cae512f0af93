#include "ds/ds_common.h"

#include <string>

#include <fmt/format.h>

#include "pulse/assembler.h"

namespace pulse::ds::internal {

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

}  // namespace pulse::ds::internal
