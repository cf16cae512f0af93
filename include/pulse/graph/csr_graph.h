// pulse::graph::CsrGraph: a graph in compressed sparse row form whose arrays
// live in an ArraySpace (array_space.h): vertex v's out-neighbours are
// edges[offsets[v] .. offsets[v+1]).  A directed graph also keeps its
// transpose (in-neighbours) for the dense (pull) edge map; a symmetric graph
// (every edge in both directions, as Ligra's `-s`) shares one pair of arrays
// for both.  Vertex ids are 32-bit, edge positions 64-bit.
//
// Thread-safety: a built graph is read-only and may be read from any number
// of threads; copies share the arrays.  Building is single-threaded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pulse/graph/array_space.h"
#include "pulse/status.h"

namespace pulse::graph {

using VertexId = uint32_t;
inline constexpr VertexId kNoVertex = UINT32_MAX;

// A list of directed edges over vertices [0, n), in local memory (the
// generators' output; the builder's input).
struct EdgeList {
  uint64_t n = 0;
  std::vector<std::pair<VertexId, VertexId>> edges;
};

class CsrGraph {
 public:
  CsrGraph() = default;

  // Builds the CSR of `list` in `space`: edges sorted by (source,
  // destination), duplicates and self loops dropped; with `symmetrize`,
  // every edge is added in both directions and the graph is symmetric.
  // A directed result gets its transpose.  The arrays are marked read-only
  // when built.  Errors: InvalidArgument for an endpoint >= n or n >= 2^32;
  // those of the space.
  static Result<CsrGraph> FromEdges(EdgeList list, bool symmetrize, ArraySpace& space);

  // Takes over filled offset (n + 1) and edge arrays, checking them:
  // offsets start at 0, never decrease and end at edges.size(); every edge
  // is < n.  `symmetric` is the caller's claim (not checked: it would cost a
  // pass over the edges with random reads).  Builds the transpose of a
  // directed graph in the same space, then marks every array read-only.
  // Errors: InvalidArgument naming the first bad offset or edge; those of
  // the space.
  static Result<CsrGraph> FromArrays(SpaceArray<uint64_t> offsets, SpaceArray<VertexId> edges, bool symmetric,
                                     ArraySpace& space);

  uint64_t num_vertices() const { return n_; }
  uint64_t num_edges() const { return m_; }
  bool symmetric() const { return symmetric_; }

  // Out-edges of v.
  uint64_t out_degree(VertexId v) const { return out_offsets_[v + 1] - out_offsets_[v]; }
  const VertexId* out_begin(VertexId v) const { return out_edges_ + out_offsets_[v]; }
  const VertexId* out_end(VertexId v) const { return out_edges_ + out_offsets_[v + 1]; }
  // In-edges of v (the out-edges for a symmetric graph).
  uint64_t in_degree(VertexId v) const { return in_offsets_[v + 1] - in_offsets_[v]; }
  const VertexId* in_begin(VertexId v) const { return in_edges_ + in_offsets_[v]; }
  const VertexId* in_end(VertexId v) const { return in_edges_ + in_offsets_[v + 1]; }

  const uint64_t* offsets() const { return out_offsets_; }
  const VertexId* edges() const { return out_edges_; }

  // The graph with every edge reversed, sharing this graph's arrays (it
  // keeps them alive).  A symmetric graph's transpose is itself.
  CsrGraph Transpose() const;

  // Bytes of the CSR arrays (offsets, edges, and the transpose's).
  uint64_t footprint_bytes() const;

 private:
  struct Storage;

  uint64_t n_ = 0, m_ = 0;
  bool symmetric_ = false;
  const uint64_t* out_offsets_ = nullptr;
  const VertexId* out_edges_ = nullptr;
  const uint64_t* in_offsets_ = nullptr;
  const VertexId* in_edges_ = nullptr;
  std::shared_ptr<const Storage> storage_;  // owns the arrays
};

}  // namespace pulse::graph
