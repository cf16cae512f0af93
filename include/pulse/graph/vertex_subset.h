// pulse::graph::VertexSubset: a set of vertices of a graph with n vertices,
// held either sparse (a list of ids, for small frontiers) or dense (one
// flag byte per vertex, for large ones), as Ligra's vertexSubset.  The edge
// map picks the form it needs and converts.  Subsets live in local memory
// (they are the framework's transient state; the graph and the
// applications' per-vertex arrays are what an ArraySpace holds).
//
// Thread-safety: a subset is used by one thread (the parallel loops of the
// framework read it concurrently but never modify it while they do).
#pragma once

#include <cstdint>
#include <vector>

#include "pulse/graph/csr_graph.h"
#include "pulse/graph/workers.h"

namespace pulse::graph {

class VertexSubset {
 public:
  // The empty subset of [0, n).
  explicit VertexSubset(uint64_t n = 0) : n_(n) {}
  // One vertex.
  static VertexSubset Single(uint64_t n, VertexId v);
  // Every vertex (dense).
  static VertexSubset All(uint64_t n);
  // The given ids (each < n, no duplicates: the caller's promise).
  static VertexSubset FromSparse(uint64_t n, std::vector<VertexId> ids);
  // Flags (size n, 1 = member) and their count.
  static VertexSubset FromDense(uint64_t n, std::vector<uint8_t> flags, uint64_t count);

  uint64_t num_vertices() const { return n_; }
  uint64_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  bool is_dense() const { return dense_; }

  // Converts in place (no-op when already in that form).
  void ToSparse();
  void ToDense();

  // The ids, ascending for a subset made dense then sparse (valid when
  // sparse).
  const std::vector<VertexId>& ids() const { return ids_; }
  // Membership (valid when dense).
  bool contains(VertexId v) const { return flags_[v] != 0; }
  const std::vector<uint8_t>& flags() const { return flags_; }

 private:
  uint64_t n_ = 0;
  uint64_t count_ = 0;
  bool dense_ = false;
  std::vector<VertexId> ids_;
  std::vector<uint8_t> flags_;
};

// Calls f(v) for every member of `subset`, on every worker.
template <typename F>
void VertexMap(const VertexSubset& subset, Workers& workers, F&& f) {
  if (subset.is_dense()) {
    const auto& flags = subset.flags();
    workers.ParallelFor(0, subset.num_vertices(), 4096, [&](uint64_t lo, uint64_t hi, uint32_t) {
      for (uint64_t v = lo; v < hi; ++v)
        if (flags[v]) f(static_cast<VertexId>(v));
    });
  } else {
    const auto& ids = subset.ids();
    workers.ParallelFor(0, ids.size(), 1024, [&](uint64_t lo, uint64_t hi, uint32_t) {
      for (uint64_t i = lo; i < hi; ++i) f(ids[i]);
    });
  }
}

// Calls f(v) for every vertex of [0, n) (an array sweep).
template <typename F>
void ForEachVertex(uint64_t n, Workers& workers, F&& f) {
  workers.ParallelFor(0, n, 4096, [&](uint64_t lo, uint64_t hi, uint32_t) {
    for (uint64_t v = lo; v < hi; ++v) f(static_cast<VertexId>(v));
  });
}

// The members v of `subset` for which pred(v) is true (sparse, in the
// subset's order for a sparse subset, ascending for a dense one).
template <typename P>
VertexSubset VertexFilter(const VertexSubset& subset, Workers& workers, P&& pred) {
  if (subset.is_dense()) {
    // Workers take chunks in any order: each chunk collects into its own
    // list so the result stays ascending.
    uint64_t n = subset.num_vertices();
    const uint64_t grain = 4096;
    std::vector<std::vector<VertexId>> chunks((n + grain - 1) / grain);
    const auto& flags = subset.flags();
    workers.ParallelFor(0, n, grain, [&](uint64_t lo, uint64_t hi, uint32_t) {
      auto& out = chunks[lo / grain];
      for (uint64_t v = lo; v < hi; ++v)
        if (flags[v] && pred(static_cast<VertexId>(v))) out.push_back(static_cast<VertexId>(v));
    });
    std::vector<VertexId> ids;
    for (auto& c : chunks) ids.insert(ids.end(), c.begin(), c.end());
    return VertexSubset::FromSparse(n, std::move(ids));
  }
  const auto& in = subset.ids();
  const uint64_t grain = 1024;
  std::vector<std::vector<VertexId>> chunks((in.size() + grain - 1) / grain);
  workers.ParallelFor(0, in.size(), grain, [&](uint64_t lo, uint64_t hi, uint32_t) {
    auto& out = chunks[lo / grain];
    for (uint64_t i = lo; i < hi; ++i)
      if (pred(in[i])) out.push_back(in[i]);
  });
  std::vector<VertexId> ids;
  for (auto& c : chunks) ids.insert(ids.end(), c.begin(), c.end());
  return VertexSubset::FromSparse(subset.num_vertices(), std::move(ids));
}

}  // namespace pulse::graph
