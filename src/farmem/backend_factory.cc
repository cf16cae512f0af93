#include <fmt/format.h>

#include "pulse/farmem/backends.h"

namespace pulse::farmem {

Result<std::unique_ptr<PageBackend>> MakeBackend(const HostAgentOptions& options) {
  switch (options.mode) {
    case BackendMode::kMemServer:
      return MakeMemServerBackend(options);
    case BackendMode::kSsd:
      return MakeLocalFileBackend(options);
    case BackendMode::kProxy:
    case BackendMode::kAgent:
      // faragent: replace the next line with `return MakeAgentBackend(options);` (pulse/farmem/agent_backend.h).
      return Status::Unavailable(fmt::format("far-memory mode '{}': the offload agent's backend is not built in",
                                             BackendModeName(options.mode)));
  }
  return Status::InvalidArgument("far-memory mode: unknown");
}

}  // namespace pulse::farmem
