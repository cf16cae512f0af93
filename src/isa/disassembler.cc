// Placeholder until the disassembler lands.
#include "pulse/assembler.h"
namespace pulse {
std::string Disassemble(std::span<const isa::Instruction>) { return {}; }
}  // namespace pulse
