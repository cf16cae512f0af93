// Registration of the `pulse` subcommands.  Each family lives in its own
// file; main.cc calls every Add* function once.
#pragma once

#include <CLI/CLI.hpp>

#include "bench/app_projection.h"

namespace pulse::tools {

// pulse asm | disasm | verify
void AddAsmCommands(CLI::App& app);
// pulse compile
void AddCompileCommand(CLI::App& app);
// pulse bench <sub>: `bench` is the parent command.
void AddBenchCommands(CLI::App& bench);
// pulse bench traverse (src/tools/traverse_bench_command.cc)
void AddTraverseBench(CLI::App& bench);
void AddTierBench(CLI::App& bench);
void AddTierLocksBench(CLI::App& bench);
void AddYcsbBench(CLI::App& bench);
// pulse bench rpc (src/tools/rpc_bench_command.cc)
void AddRpcBench(CLI::App& bench);
// pulse bench kv (src/tools/kv_bench_command.cc)
void AddKvBench(CLI::App& bench);
// pulse bench ring (src/tools/ring_bench_command.cc)
void AddRingBench(CLI::App& bench);
// pulse bench tx (src/tools/tx_bench_command.cc)
void AddTxBench(CLI::App& bench);
// pulse bench ds (src/tools/ds_bench_command.cc)
void AddDsBench(CLI::App& bench);
// pulse bench app (src/tools/app_bench_command.cc)
void AddAppBench(CLI::App& bench);
// pulse bench dlrm (src/tools/dlrm_bench_command.cc)
void AddDlrmBench(CLI::App& bench);
// --fabric-one-way-us and --fabric-gbps, the rack projection's parameters
// (src/bench/app_projection.h), into *fabric (app_bench_command.cc; bench
// app and bench suite).
void AddFabricFlags(CLI::App* cmd, bench::FabricModel* fabric);
// pulse bench suite (src/tools/suite_command.cc)
void AddSuiteBench(CLI::App& bench);
// pulse bench graph (src/tools/graph_bench_command.cc)
void AddGraphBench(CLI::App& bench);
// pulse bench soak (src/tools/soak_command.cc)
void AddSoakBench(CLI::App& bench);
// pulse switch | memnode: the server processes of a rack.
void AddNodeCommands(CLI::App& app);
// pulse agent: the far-memory offload agent (src/tools/agent_command.cc)
void AddAgentCommand(CLI::App& app);
// pulse cluster up | down | status | restart | pools | clean
void AddClusterCommands(CLI::App& app);
// pulse cluster drop (src/tools/admin_commands.cc); after AddClusterCommands.
void AddAdminCommands(CLI::App& app);
// pulse kv serve (src/tools/kv_command.cc)
void AddKvCommands(CLI::App& app);
// pulse bench resp (src/tools/kv_command.cc)
void AddRespBench(CLI::App& bench);
// pulse graph gen | run (src/tools/graph_command.cc)
void AddGraphCommands(CLI::App& app);
// pulse demo: the main job's workload against a running cluster
void AddDemoCommand(CLI::App& app);

}  // namespace pulse::tools
