// Placeholder until the assembler lands.
#include "pulse/assembler.h"
namespace pulse {
Result<std::vector<isa::Instruction>> Assemble(std::string_view) { return Status::Internal("assembler not built yet"); }
}  // namespace pulse
