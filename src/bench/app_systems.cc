#include "bench/app_systems.h"

#include <fmt/format.h>

namespace pulse::bench {

const std::vector<AppSystemEntry>& AppSystems() {
  static const std::vector<AppSystemEntry> systems = {
      {"pulse", "traversals offloaded; continuations go from memory node to memory node (through the switch with routing switch)", MakePulseSystem},
      {"pulse-acc", "traversals offloaded; at a memory-node boundary the CPU node re-issues", MakePulseAccSystem},
      {"cache", "Fastswap-like: traversals at the CPU node over a 4 KiB page cache, each miss one read", MakeCacheSystem},
      {"rpc", "native handlers on the memory node; at a node boundary the CPU node re-issues", MakeRpcSystem},
      {"rpc-wimpy", "rpc on an emulated ~1 GHz SmartNIC core (--rpc-core-ghz)", MakeRpcWimpySystem},
      {"cache-rpc", "AIFM-like: object cache at the CPU node, RPC on a miss (one memory node)", MakeCacheRpcSystem},
  };
  return systems;
}

Result<std::unique_ptr<apps::AppSystem>> MakeAppSystem(const std::string& name, const AppSystemConfig& config) {
  std::string known;
  for (const AppSystemEntry& e : AppSystems()) {
    if (name == e.name) return e.make(config);
    known += known.empty() ? e.name : fmt::format(", {}", e.name);
  }
  return Status::InvalidArgument(fmt::format("unknown system '{}' (known: {})", name, known));
}

}  // namespace pulse::bench
