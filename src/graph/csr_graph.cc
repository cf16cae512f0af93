#include "pulse/graph/csr_graph.h"

#include <algorithm>

#include <fmt/format.h>

namespace pulse::graph {

struct CsrGraph::Storage {
  SpaceArray<uint64_t> offsets;
  SpaceArray<VertexId> edges;
  SpaceArray<uint64_t> in_offsets;  // empty for a symmetric graph
  SpaceArray<VertexId> in_edges;
};

namespace {

Status CheckArrays(const SpaceArray<uint64_t>& offsets, const SpaceArray<VertexId>& edges) {
  if (offsets.size() == 0) return Status::InvalidArgument("graph: offsets array is empty (needs n + 1 entries)");
  uint64_t n = offsets.size() - 1;
  if (n >= kNoVertex) return Status::InvalidArgument(fmt::format("graph: {} vertices exceed 32-bit ids", n));
  if (offsets[0] != 0) return Status::InvalidArgument(fmt::format("graph: offsets[0] is {}, not 0", offsets[0]));
  for (uint64_t v = 0; v < n; ++v)
    if (offsets[v + 1] < offsets[v])
      return Status::InvalidArgument(
          fmt::format("graph: offsets[{}] = {} is below offsets[{}] = {}", v + 1, offsets[v + 1], v, offsets[v]));
  if (offsets[n] != edges.size())
    return Status::InvalidArgument(
        fmt::format("graph: offsets[{}] = {} but there are {} edges", n, offsets[n], edges.size()));
  for (uint64_t e = 0; e < edges.size(); ++e)
    if (edges[e] >= n)
      return Status::InvalidArgument(fmt::format("graph: edges[{}] = {} is not a vertex (n = {})", e, edges[e], n));
  return Status::Ok();
}

}  // namespace

Result<CsrGraph> CsrGraph::FromEdges(EdgeList list, bool symmetrize, ArraySpace& space) {
  if (list.n >= kNoVertex) return Status::InvalidArgument(fmt::format("graph: {} vertices exceed 32-bit ids", list.n));
  for (size_t i = 0; i < list.edges.size(); ++i) {
    auto [s, d] = list.edges[i];
    if (s >= list.n || d >= list.n)
      return Status::InvalidArgument(fmt::format("graph: edge {} ({}, {}) has an endpoint >= n = {}", i, s, d, list.n));
  }
  auto& e = list.edges;
  if (symmetrize) {
    size_t k = e.size();
    e.reserve(2 * k);
    for (size_t i = 0; i < k; ++i) e.emplace_back(e[i].second, e[i].first);
  }
  std::erase_if(e, [](const auto& p) { return p.first == p.second; });
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());

  PULSE_ASSIGN_OR_RETURN(auto offsets, SpaceArray<uint64_t>::Make(space, "offsets", list.n + 1));
  PULSE_ASSIGN_OR_RETURN(auto edges, SpaceArray<VertexId>::Make(space, "edges", e.size()));
  for (const auto& [s, d] : e) ++offsets[s + 1];
  for (uint64_t v = 0; v < list.n; ++v) offsets[v + 1] += offsets[v];
  for (size_t i = 0; i < e.size(); ++i) edges[i] = e[i].second;
  e.clear();
  e.shrink_to_fit();
  return FromArrays(std::move(offsets), std::move(edges), symmetrize, space);
}

Result<CsrGraph> CsrGraph::FromArrays(SpaceArray<uint64_t> offsets, SpaceArray<VertexId> edges, bool symmetric,
                                      ArraySpace& space) {
  PULSE_RETURN_IF_ERROR(CheckArrays(offsets, edges));
  auto storage = std::make_shared<Storage>();
  uint64_t n = offsets.size() - 1;
  uint64_t m = edges.size();
  if (!symmetric) {
    // The transpose by counting sort: in-degrees, their prefix sums, then
    // each edge (s, d) placed at d's next free slot.  Scanning sources in
    // order leaves each in-list sorted.
    PULSE_ASSIGN_OR_RETURN(auto in_offsets, SpaceArray<uint64_t>::Make(space, "in_offsets", n + 1));
    PULSE_ASSIGN_OR_RETURN(auto in_edges, SpaceArray<VertexId>::Make(space, "in_edges", m));
    for (uint64_t i = 0; i < m; ++i) ++in_offsets[edges[i] + 1];
    for (uint64_t v = 0; v < n; ++v) in_offsets[v + 1] += in_offsets[v];
    {
      PULSE_ASSIGN_OR_RETURN(auto cursor, SpaceArray<uint64_t>::Make(space, "transpose_cursor", n));
      for (uint64_t v = 0; v < n; ++v) cursor[v] = in_offsets[v];
      for (uint64_t s = 0; s < n; ++s)
        for (uint64_t i = offsets[s]; i < offsets[s + 1]; ++i) in_edges[cursor[edges[i]]++] = static_cast<VertexId>(s);
    }
    PULSE_RETURN_IF_ERROR(in_offsets.MarkReadOnly());
    PULSE_RETURN_IF_ERROR(in_edges.MarkReadOnly());
    storage->in_offsets = std::move(in_offsets);
    storage->in_edges = std::move(in_edges);
  }
  PULSE_RETURN_IF_ERROR(offsets.MarkReadOnly());
  PULSE_RETURN_IF_ERROR(edges.MarkReadOnly());
  storage->offsets = std::move(offsets);
  storage->edges = std::move(edges);

  CsrGraph g;
  g.n_ = n;
  g.m_ = m;
  g.symmetric_ = symmetric;
  g.out_offsets_ = storage->offsets.data();
  g.out_edges_ = storage->edges.data();
  g.in_offsets_ = symmetric ? g.out_offsets_ : storage->in_offsets.data();
  g.in_edges_ = symmetric ? g.out_edges_ : storage->in_edges.data();
  g.storage_ = std::move(storage);
  return g;
}

CsrGraph CsrGraph::Transpose() const {
  CsrGraph t = *this;
  std::swap(t.out_offsets_, t.in_offsets_);
  std::swap(t.out_edges_, t.in_edges_);
  return t;
}

uint64_t CsrGraph::footprint_bytes() const {
  uint64_t one = (n_ + 1) * sizeof(uint64_t) + m_ * sizeof(VertexId);
  return symmetric_ ? one : 2 * one;
}

}  // namespace pulse::graph
