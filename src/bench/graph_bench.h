// `pulse bench graph`: the five graph applications of seed 003 (BFS,
// PageRank, Radii, BC, CC) on graph files, on each system of
// src/bench/graph_spaces.h, side by side.  Per (graph, system, app): run
// time, host resident memory (now and peak since the run started), host CPU
// seconds, the system's counters (memory-node bytes by class, cache hit
// rates), and whether the answer equals the in-memory (local) run.
// A benchmark, not a test: nothing is asserted about the figures.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse::bench {

struct GraphBenchOptions {
  std::vector<std::string> apps = {"bfs", "pagerank", "radii", "bc", "cc"};
  std::vector<std::string> graphs;   // files (PULSECSR binary or AdjacencyGraph text)
  std::vector<std::string> systems = {"local"};
  bool symmetric = false;            // text graphs: symmetric (Ligra's -s)
  uint32_t threads = 2;
  uint32_t root = 0;                 // BFS and BC source (0: the vertex of highest out-degree)
  uint32_t pagerank_iterations = 10;  // fixed: PageRank runs exactly this many
  uint64_t radii_seed = 1;
  // Far systems: the page buffer (0: a quarter of the graph's CSR bytes)
  // and page size.
  uint64_t buffer_bytes = 0;
  uint32_t page_bytes = 64 << 10;
  // Far systems: join this cluster instead of starting one.
  std::string switch_address;
  // proxy, agent: the `pulse agent` to page through; proxy uses
  // proxy_agent_address instead when set (an agent started with --mode proxy).
  std::string agent_address;
  std::string proxy_agent_address;
  // A cluster this benchmark starts (no switch_address) also runs an
  // offload agent with these flags (e.g. "--mode proxy"), used by proxy
  // and agent unless agent_address is given.  Empty: DefaultAgentFlags.
  std::string agent_flags;
  std::string binary, run_dir, ucx_tls;
  std::function<void(const std::string&)> progress;
};

// The flags of the agent a started cluster runs when none are given: for
// a run of proxy or agent (not both) with no agent address and no
// switch, "--mode proxy" or "--mode agent", so that `--system agent`
// alone just works; else o.agent_flags as given (empty: no agent).
// InvalidArgument when proxy and agent would share one defaulted agent
// (each needs its own mode: run them one after the other, or give
// --agent-flags or the agents' addresses).
Result<std::string> DefaultAgentFlags(const GraphBenchOptions& o);

// Runs every (graph, system, app) and returns
//   {"graphs": [{file, vertices, edges, symmetric, csr_bytes}],
//    "results": [{graph, system, app, seconds, rounds, host_rss_bytes,
//                 host_peak_rss_bytes, host_cpu_seconds, buffer_bytes,
//                 host_rss_at_start_bytes (far systems: before any array),
//                 verified, verify_error, error (when it failed),
//                 counters: {...} (changes over the run: the host agent's,
//                   and for cluster systems node_* from the memory agents
//                   and agent_* from the offload agent; graph_counters.h),
//                 derived: {hit rates, microseconds per stage},
//                 memory_node_bytes: {on_demand, prefetch, write_back,
//                   static_load} (memserver, proxy, agent),
//                 agent_cpu_seconds (proxy, agent)}]}
// The in-memory answers are kept in a temporary directory while the far
// systems run, so that host memory counts only the system under test.
// A system or app that fails is reported in its result (error) and the
// others still run.  Errors: InvalidArgument for an unknown app or system
// or no graph; a graph that cannot be read.
Result<nlohmann::json> RunGraphBench(const GraphBenchOptions& options);

}  // namespace pulse::bench
