// BFS with the neighbour scans offloaded to the memory nodes (beyond seed
// 003): the edge targets and the parent array live in far memory (Client
// allocations); for each frontier vertex the CPU node sends one traversal
// (iterator graph_bfs_scan, src/graph/iterators/) that walks the vertex's
// edges, checks each target's parent where it lives, stores the frontier
// vertex as the parent of the unvisited ones and returns only those.  The
// next frontier is all that crosses the fabric; the paged alternative moves
// every page of edges and parents the search touches.  The offsets stay at
// the CPU node (they pick each scan's range).
//
// Thread-safety: an OffloadedBfs uses its Client from one thread, as the
// Client requires.
#pragma once

#include <cstdint>

#include "pulse/client.h"
#include "pulse/graph/apps.h"
#include "pulse/graph/csr_graph.h"
#include "pulse/status.h"

namespace pulse::graph {

struct OffloadedBfsStats {
  uint64_t traversals = 0;        // scans sent (resumed scans included)
  uint64_t iterations = 0;        // memory-node iterations (two per edge scanned)
  uint64_t vertices_returned = 0;  // next-frontier vertices the scans reported
};

class OffloadedBfs {
 public:
  // Copies g's edge targets into far memory and allocates the parent array
  // there, through `client` (which must outlive the object).  The graph
  // must outlive it too (its offsets are read).  Errors: those of
  // Client::Allocate/Write; Internal if the embedded iterator is broken.
  static Result<OffloadedBfs> Upload(Client& client, const CsrGraph& g);

  // BFS from `root`: parents (read back from far memory) and depths, as
  // RunBfs.  Up to `in_flight` scans are outstanding at once; every wait is
  // bounded by `timeout`.  Errors: InvalidArgument for a root >= n; a scan
  // that faults (its TraversalStatus as a Status naming the vertex);
  // Timeout; the Client's.
  Result<AppResult> Run(VertexId root, uint32_t in_flight = 64,
                        std::chrono::milliseconds timeout = std::chrono::seconds(60));

  const OffloadedBfsStats& stats() const { return stats_; }

 private:
  OffloadedBfs(Client& client, const CsrGraph& g) : client_(&client), graph_(&g) {}

  Client* client_;
  const CsrGraph* graph_;
  uint64_t edges_addr_ = 0;
  uint64_t parents_addr_ = 0;
  OffloadedBfsStats stats_;
};

}  // namespace pulse::graph
