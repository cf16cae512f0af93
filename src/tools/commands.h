// Registration of the `pulse` subcommands.  Each family lives in its own
// file; main.cc calls every Add* function once.
#pragma once

#include <CLI/CLI.hpp>

namespace pulse::tools {

// pulse asm | disasm | verify
void AddAsmCommands(CLI::App& app);
// pulse bench <sub>: `bench` is the parent command.
void AddBenchCommands(CLI::App& bench);

}  // namespace pulse::tools
