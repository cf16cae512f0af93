#include "bench/graph_spaces.h"

#include <fmt/format.h>

namespace pulse::bench {
namespace {

class LocalGraphSpace : public GraphSpace {
 public:
  graph::ArraySpace& space() override { return *space_; }
  std::vector<std::pair<std::string, double>> Counters() override { return {}; }

 private:
  std::unique_ptr<graph::ArraySpace> space_ = graph::MakeLocalArraySpace();
};

}  // namespace

std::vector<std::string> GraphSystems() { return {"local", "memserver", "proxy", "agent", "ssd"}; }

bool GraphSystemNeedsCluster(const std::string& system) {
  return system == "memserver" || system == "proxy" || system == "agent";
}

bool GraphSystemNeedsAgent(const std::string& system) { return system == "proxy" || system == "agent"; }

Result<std::unique_ptr<GraphSpace>> MakeGraphSpace(const std::string& system, const GraphSpaceOptions& options) {
  if (system == "local") return std::unique_ptr<GraphSpace>(std::make_unique<LocalGraphSpace>());
  // The far systems (memserver, proxy, agent, ssd) plug in here: a
  // GraphSpace over pulse::farmem::HostAgent regions.  This build has no
  // host agent yet, so they are refused rather than imitated.
  for (const auto& s : GraphSystems())
    if (s == system)
      return Status::InvalidArgument(fmt::format("graph system '{}' needs the far-memory host agent (pulse/farmem), "
                                                 "which this build does not have", system));
  return Status::InvalidArgument(fmt::format("graph system '{}' is not one of local, memserver, proxy, agent, ssd", system));
}

}  // namespace pulse::bench
