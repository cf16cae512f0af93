// The systems `pulse bench app --system S` can run an application on
// (pulse::apps::AppSystem), and how to add one.
//
// To add a system: write src/bench/app_system_<name>.cc with a factory
//   Result<std::unique_ptr<apps::AppSystem>> Make<Name>System(const AppSystemConfig&);
// declare it below, add the file to src/bench/CMakeLists.txt, and add one
// line {"<name>", "<description>", Make<Name>System} to the table in
// src/bench/app_systems.cc.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pulse/apps/app_system.h"
#include "pulse/client.h"
#include "pulse/rpc.h"
#include "pulse/status.h"

namespace pulse::bench {

// What a system is built from.
struct AppSystemConfig {
  ClientOptions client;  // switch address, transport and polling already set
  std::optional<ExecutionMode> mode;  // --mode: where traversals run (unset: the dispatch rule)
  uint64_t working_set_bytes = 0;     // the application's far data (e.g. to size a cache)
  uint32_t memory_nodes = 0;
  // cache: the page cache's size as a fraction of working_set_bytes, and
  // its eviction ("lru" or "clock").  cache-rpc: its object caches' budget,
  // the same fraction.
  double cache_fraction = 0.10;
  std::string cache_policy = "lru";
  // rpc, rpc-wimpy, cache-rpc: "switch" (requests and replies cross the
  // switch process, as in a rack; the default) or "direct" (CPU node <->
  // memory node); the emulated wimpy core's clock (rpc-wimpy).
  std::string rpc_path = "direct";
  double rpc_core_ghz = 1.0;
};

using AppSystemFactory = Result<std::unique_ptr<apps::AppSystem>> (*)(const AppSystemConfig&);

struct AppSystemEntry {
  const char* name;
  const char* description;
  AppSystemFactory make;
};

// Every registered system, in the order --help lists them.
const std::vector<AppSystemEntry>& AppSystems();
// The system called `name`, connected.  InvalidArgument naming the known
// systems for an unknown name; the factory's errors otherwise.
Result<std::unique_ptr<apps::AppSystem>> MakeAppSystem(const std::string& name, const AppSystemConfig& config);

// src/bench/app_system_pulse.cc
Result<std::unique_ptr<apps::AppSystem>> MakePulseSystem(const AppSystemConfig& config);
Result<std::unique_ptr<apps::AppSystem>> MakePulseAccSystem(const AppSystemConfig& config);
// src/bench/app_system_cache.cc
Result<std::unique_ptr<apps::AppSystem>> MakeCacheSystem(const AppSystemConfig& config);
// src/bench/app_system_rpc.cc
Result<std::unique_ptr<apps::AppSystem>> MakeRpcSystem(const AppSystemConfig& config);
Result<std::unique_ptr<apps::AppSystem>> MakeRpcWimpySystem(const AppSystemConfig& config);
// What the RPC systems share (src/bench/app_system_rpc.cc): the RpcClient
// options of config (InvalidArgument naming --rpc-path or --rpc-core-ghz),
// and the RpcClient's counters as a system's stats, with the calls'
// critical-path messages and bytes (kCriticalPathMessages / kCriticalPathBytes:
// each round trip two messages, four via the switch; the bytes of `client`'s
// messages, which every call sends or receives, twice via the switch).
Result<RpcOptions> AppRpcOptions(const AppSystemConfig& config, bool wimpy);
void AddRpcStats(const RpcClient& rpc, const Client& client, const RpcOptions& options,
                 apps::AppSystemStats* stats);

// The AppSystemStats counters a system adds to the critical path the bench
// counts from the Client itself (offloaded traversals' legs, one-sided
// accesses): `pulse bench app`, docs/evaluation.md.
inline constexpr const char* kCriticalPathMessages = "critical_path_messages";
inline constexpr const char* kCriticalPathBytes = "critical_path_bytes";
// src/bench/app_system_cache_rpc.cc
Result<std::unique_ptr<apps::AppSystem>> MakeCacheRpcSystem(const AppSystemConfig& config);

}  // namespace pulse::bench
