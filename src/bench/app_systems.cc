#include "bench/app_systems.h"

#include <fmt/format.h>

namespace pulse::bench {

const std::vector<AppSystemEntry>& AppSystems() {
  static const std::vector<AppSystemEntry> systems = {
      {"pulse", "traversals offloaded; continuations cross memory nodes through the switch", MakePulseSystem},
      {"pulse-acc", "traversals offloaded; at a memory-node boundary the CPU node re-issues", MakePulseAccSystem},
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
