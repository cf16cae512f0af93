// Placeholder until pulse asm/disasm/verify land.
#include "tools/commands.h"
namespace pulse::tools {
void AddAsmCommands(CLI::App&) {}
}  // namespace pulse::tools
