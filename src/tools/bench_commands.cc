#include "tools/commands.h"
namespace pulse::tools {
void AddBenchCommands(CLI::App&) {}
}  // namespace pulse::tools
