#include <fmt/format.h>

#include "pulse/farmem/agent_backend.h"
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
      // Which of the two a request gets is the agent's own configuration
      // (`pulse agent --mode proxy|agent`).
      if (options.agent_address.empty())
        return Status::InvalidArgument(fmt::format("far-memory mode '{}': agent_address is empty",
                                                   BackendModeName(options.mode)));
      return MakeAgentBackend(AgentBackendOptions{.agent_address = options.agent_address});
  }
  return Status::InvalidArgument("far-memory mode: unknown");
}

}  // namespace pulse::farmem
