// What `pulse bench graph` reads of the cluster around a far system, beside
// the host agent's own counters: the memory nodes' traffic by class (the
// memory agent's counters, `counters.farmem` in a memory node's stats) and
// the offload agent's caches, prefetches, CPU and stage times (its stats).
// Each is a flat list of cumulative named figures, so the benchmark can
// report their change over a run like the host's.
// Thread-safety: a ClusterCounterProbe belongs to one thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse::cluster {
class ControlSession;
}

namespace pulse::bench {

using NamedCounters = std::vector<std::pair<std::string, double>>;

// The traffic classes, in the memory agent's names.
const std::vector<std::string>& TrafficClasses();

// A memory node's `counters.farmem` object as node_bytes_<class> and
// node_ops_<class> (absent fields count 0); sums over nodes are the
// caller's.
NamedCounters MemoryAgentCounters(const nlohmann::json& farmem);

// The offload agent's stats counters as agent_<name>: its cache hits and
// misses, prefetches, CPU seconds, memory bytes by class (what it sent to
// the memory nodes), read residence and memory operation times.
NamedCounters OffloadAgentCounters(const nlohmann::json& counters);

// Ratios derived from counter changes over one run (names as above, plus
// the host agent's): static and dynamic hit rates, microseconds per fetch
// and per write-back at the host, per host read in the agent and per
// memory operation of each class, and the host<->agent hop of a page read
// (hop_us_<stage>, hop_slept_share, hop_us_from_agent_{slept,polled}: the
// host's hop_* counters, farmem::AgentHopStats).  A ratio whose
// denominator is 0 is left out.
nlohmann::json DerivedFigures(const NamedCounters& changes);

// Reads the counters of a running cluster: the memory nodes the switch
// lists, and the offload agent if `agent_address` is not empty.
class ClusterCounterProbe {
 public:
  // Errors: those of ControlSession::Create.
  static Result<std::unique_ptr<ClusterCounterProbe>> Create(std::string switch_address, std::string agent_address);
  ~ClusterCounterProbe();

  // Cumulative counters now, summed over memory nodes.  Errors: a node
  // that does not answer (Unavailable, Timeout), naming it.
  Result<NamedCounters> Read();

 private:
  ClusterCounterProbe() = default;
  std::unique_ptr<cluster::ControlSession> session_;
  std::string switch_address_, agent_address_;
};

// Results of `pulse bench graph` that failed: those with an error or not
// verified, as "graph system app: why" lines.  Empty when all passed.
std::vector<std::string> GraphBenchFailures(const nlohmann::json& report);

}  // namespace pulse::bench
