// The `pulse` binary: every subcommand of the system in one executable.
#include <CLI/CLI.hpp>

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"pulse: disaggregated memory with near-memory pointer traversals"};
  app.require_subcommand(1);
  pulse::tools::AddAsmCommands(app);
  pulse::tools::AddCompileCommand(app);
  pulse::tools::AddNodeCommands(app);
  pulse::tools::AddAgentCommand(app);
  pulse::tools::AddClusterCommands(app);
  pulse::tools::AddAdminCommands(app);
  pulse::tools::AddKvCommands(app);
  pulse::tools::AddGraphCommands(app);
#ifdef PULSE_WITH_BENCHMARKS  // PULSE_BUILD_BENCHMARKS
  pulse::tools::AddDemoCommand(app);
  CLI::App* bench = app.add_subcommand("bench", "Run a benchmark and print its figures");
  bench->require_subcommand(1);
  pulse::tools::AddBenchCommands(*bench);
#endif
  CLI11_PARSE(app, argc, argv);
  return 0;
}
