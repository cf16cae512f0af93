// `pulse cluster status`: each node's process and counters, as a table or
// as JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/launcher.h"

namespace pulse::cluster {

struct NodeStatus {
  const NodeProcess* node = nullptr;
  bool running = false;    // the process exists
  bool answering = false;  // it answered `stats`
  std::string error;       // why not, when running && !answering
  nlohmann::json stats;    // the `stats` answer (role, counters, ...)
};

// Asks every node of `state` for its stats, each within `timeout`.
std::vector<NodeStatus> QueryStatus(const ClusterState& state, std::chrono::milliseconds timeout);

// {"cluster":..., "state_file":..., "switch_address":..., "healthy":bool,
//  "nodes":[{"name","role","node","address","pid","log","alive","answering",
//            "error","counters":{...}}]}
nlohmann::json StatusJson(const ClusterState& state, const std::vector<NodeStatus>& nodes);

// One line per node: name, role, address, pid, alive, requests, iterations,
// forwards (the switch: continuations forwarded between memory nodes; a
// memory node: its "not local" answers), bytes in/out, engine occupancy
// (active/capacity workspaces, queued requests).
std::string StatusTable(const ClusterState& state, const std::vector<NodeStatus>& nodes);

// True if every node runs and answers.
bool Healthy(const std::vector<NodeStatus>& nodes);

// 1536 -> "1.5 KiB".
std::string HumanBytes(uint64_t bytes);

}  // namespace pulse::cluster
