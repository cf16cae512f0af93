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
//  "problems":[...],
//  "nodes":[{"name","role","node","address","pid","log","alive","answering",
//            "error","counters":{...}}]}
// A memory node's counters include its pool use per tenant:
// "tenants": {"<id>": {"session_bytes", "durable_bytes", "allocations"}}.
nlohmann::json StatusJson(const ClusterState& state, const std::vector<NodeStatus>& nodes);

// One line per node: name, role, address, pid, alive, requests, iterations,
// forwards (the switch: continuations forwarded between memory nodes; a
// memory node: its "not local" answers), bytes in/out, engine occupancy
// (active/capacity workspaces, queued requests).
std::string StatusTable(const ClusterState& state, const std::vector<NodeStatus>& nodes);

// True if every node runs and answers.
bool Healthy(const std::vector<NodeStatus>& nodes);

// What needs an operator although every node answers, one line each, e.g.
// "memnode-0: pool full (7.9 MiB of 8.0 MiB used, largest free 64.0 KiB)":
// a memory node whose pool has less than 5% free (new clients' allocations
// fail there), and a node that runs insecure (its `stats` say "insecure":
// started with --insecure and no cluster secret).  `pulse cluster status --check` exits 1 if there is any.
std::vector<std::string> Problems(const std::vector<NodeStatus>& nodes);

// Pool use per memory node and tenant: "memnode-0 tenant 1: 2.0 MiB session,
// 1.0 MiB durable (3 allocations)", one line each (none for an empty pool).
std::string TenantUseTable(const std::vector<NodeStatus>& nodes);

// The far-memory line of `pulse cluster status`'s table for node `n` with
// the `counters` of its stats (docs/farmem_agent.md): a memory node's
// memory-agent traffic by class ("  memnode-0 far memory: on-demand 1.0 MiB,
// prefetch ..., write-back ..., static load ..., preload ...\n"), empty
// when it has no `farmem` counters or moved no bytes; the offload agent's
// host pages, cache hits, batches and CPU seconds.  Declared here for tests.
std::string FarmemLine(const NodeProcess& n, const nlohmann::json& counters);

// The request-path lines of `pulse cluster status` for memory node `n`
// with the `counters` of its stats (docs/ring.md): how many of its
// connections use the ring path and over what, then a line per connection
// that has a ring (its CPU node, layout, how answers travel); the other
// connections use messages.  Empty for other roles or without ring stats.
// Declared here for tests.
std::string RequestPathLine(const NodeProcess& n, const nlohmann::json& counters);

// 1536 -> "1.5 KiB".
std::string HumanBytes(uint64_t bytes);

}  // namespace pulse::cluster
