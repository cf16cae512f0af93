#include "pulse/farmem/options.h"

#include <fmt/format.h>

namespace pulse::farmem {

std::string_view BackendModeName(BackendMode mode) {
  switch (mode) {
    case BackendMode::kMemServer: return "memserver";
    case BackendMode::kProxy: return "proxy";
    case BackendMode::kAgent: return "agent";
    case BackendMode::kSsd: return "ssd";
  }
  return "?";
}

Result<BackendMode> ParseBackendMode(std::string_view name) {
  for (BackendMode m : {BackendMode::kMemServer, BackendMode::kProxy, BackendMode::kAgent, BackendMode::kSsd}) {
    if (BackendModeName(m) == name) return m;
  }
  return Status::InvalidArgument(
      fmt::format("far-memory mode '{}': expected memserver, proxy, agent or ssd", name));
}

}  // namespace pulse::farmem
