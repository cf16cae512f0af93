// The systems `pulse bench graph` runs the graph applications on, each an
// ArraySpace (pulse/graph/array_space.h) the framework allocates the graph
// and the applications' arrays in, plus the figures the system reports.
//   local      anonymous memory of this process (the upper bound; also the
//              in-memory run every other result is verified against)
//   memserver, proxy, agent, ssd
//              far-memory regions of the host agent (pulse/farmem/
//              host_agent.h) in that backend mode, one region per array,
//              paged through one buffer of `buffer_bytes`.
//   offload    not a space: BFS with its neighbour scans offloaded to the
//              memory nodes (pulse/graph/offloaded_bfs.h, graph_bench.cc).
// Thread-safety: a GraphSpace is used by the benchmark's thread; the
// memory it hands out is used by the framework's workers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pulse/graph/array_space.h"
#include "pulse/status.h"

namespace pulse::bench {

struct GraphSpaceOptions {
  uint64_t buffer_bytes = 0;      // far systems: the host agent's page buffer
  uint32_t page_bytes = 64 << 10;  // far systems: page size
  // Far systems: the cluster (memory node and, for proxy and agent,
  // `pulse agent`) the benchmark started or joined.
  std::string switch_address;
  std::string agent_address;
  std::string ssd_directory = "/tmp/pulse-graph-ssd";
};

class GraphSpace {
 public:
  virtual ~GraphSpace() = default;
  virtual graph::ArraySpace& space() = 0;
  // Cumulative counters of the system by name (e.g. "node_bytes_on_demand",
  // "static_cache_hits"); the benchmark reports their change over each run.
  virtual std::vector<std::pair<std::string, double>> Counters() = 0;
};

// The systems MakeGraphSpace knows, in the order above.
std::vector<std::string> GraphSystems();
// Whether `system` needs a cluster (memory nodes) to run.
bool GraphSystemNeedsCluster(const std::string& system);
// Whether `system` needs `pulse agent` in front of the memory nodes.
bool GraphSystemNeedsAgent(const std::string& system);

// The space of `system`.  Errors: InvalidArgument for a system that is
// not in GraphSystems() or not available in this build (naming it), those
// of the system's setup.
Result<std::unique_ptr<GraphSpace>> MakeGraphSpace(const std::string& system, const GraphSpaceOptions& options);

}  // namespace pulse::bench
