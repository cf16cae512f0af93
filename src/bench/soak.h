// `pulse bench soak`: a long mixed read/write workload on the data-structure
// library (pulse::ds::UnorderedMap, BTree, List), each structure shadowed by
// its std:: counterpart, with faults injected all along:
//   - traversal messages lost, duplicated and reordered at the transport
//     boundary (net::FaultInjection) in the client and, for a cluster the
//     soak starts itself, in the switch and memory nodes;
//   - for its own cluster, a memory node killed (SIGKILL) every
//     restart_every_s and restarted down_s later (it re-attaches its pool),
//     by a thread of its own; meanwhile the client re-sends traversals to the
//     dead node under their ids (ClientOptions::ride_out_unavailable), so
//     the restarted node answers STORE-bearing ones from its durable record.
// Reads are checked against the shadows as they go.  A write that fails
// (the node is down, the retry budget ran out) is unacknowledged: its key
// may hold the old or the new state, and the next successful read decides
// which (anything else is a violation).  At the end every key of every
// structure is read back (each acknowledged write must be readable) and
// each structure must equal its shadow; the BTree is also searched for every
// key of its key space and must pass Validate() (after every restart too).
// Not part of CI.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::bench {

struct SoakOptions {
  double minutes = 10;
  std::string switch_address;   // join this cluster; empty: start a local one
  std::string binary;           // the pulse executable for a started cluster (empty: this one)
  std::string run_dir;          // logs of a started cluster (empty: $PULSE_RUN_DIR, else "run")
  uint32_t memnodes = 2;        // of a started cluster
  // net::FaultInjection spec for traversal messages ("" : none); the message
  // id filter is added here.
  std::string faults = "loss=0.02,dup=0.02,reorder=0.05,hold_us=2000,seed=7";
  double restart_every_s = 30;  // own cluster: kill a memory node this often (0: never)
  double down_s = 2;            // ... and restart it this much later
  // Which structures the workload uses: any of "map", "tree", "list",
  // "counter" (a far counter on each memory node, incremented by an
  // offloaded STORE-bearing program), comma-separated.
  std::string structures = "map,tree,list,counter";
  uint64_t keys = 4096;         // key space of the map and the tree
  uint32_t max_list = 256;      // longest list
  uint64_t seed = 1;
  double progress_every_s = 10;
  std::function<void(const std::string&)> progress;
};

struct SoakResult {
  double seconds = 0;
  uint64_t ops = 0;
  std::map<std::string, uint64_t> ops_by_kind;     // "map.find", "tree.insert", ...
  std::map<std::string, uint64_t> errors_by_kind;  // status code name -> count
  uint64_t unacknowledged_writes = 0;              // failed writes (their keys were re-decided)
  uint32_t restarts = 0;                           // memory node kill + restart cycles
  // Per kill: milliseconds from the kill until the switch listed the node
  // as dead (polled every 10 ms; absent if it had not within 10 s).
  std::vector<double> switch_detect_ms;
  ClientCounters client;
  uint64_t client_faults_injected = 0;             // dropped + duplicated + reordered by the client
  uint64_t node_faults_injected = 0;               // ... by the switch and memory nodes (current processes)
  uint64_t keys_checked = 0;                       // in the final check
  // Failed writes a restarted memory node refused as "outcome unknown" (a
  // STORE-bearing request it had begun before its crash; never re-run).
  uint64_t outcome_unknown = 0;
  // Failed BTree updates that left a half-done split/merge to repair, and
  // Validate() runs that passed (after restarts and at the end).
  uint64_t tree_half_done = 0;
  uint64_t tree_validations = 0;
  // Memory nodes' duplicate suppression, summed over their processes (each
  // read just before it was killed, and at the end): retransmissions
  // answered from memory, from the durable record after a restart, and
  // refused as outcome unknown.
  uint64_t node_duplicates = 0;
  uint64_t node_durable_answers = 0;
  uint64_t node_outcome_unknown = 0;
  bool invariants_ok = false;
  std::vector<std::string> violations;             // the first few
  std::string switch_address;
  bool own_cluster = false;
};

// Runs the soak.  Errors only when it cannot run (the cluster cannot be
// started or joined, a structure cannot be created, a restart fails); a
// violated invariant is reported in the result (invariants_ok false).
Result<SoakResult> RunSoak(const SoakOptions& options);

}  // namespace pulse::bench
