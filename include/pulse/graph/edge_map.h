// pulse::graph::EdgeMap: Ligra's edgeMap.  Applies an update function to
// the edges leaving a frontier and returns the vertices it activated, in
// one of two modes chosen per call by Ligra's rule:
//   sparse (push): for each frontier vertex u and out-edge (u, v) with
//                  f.Cond(v), f.UpdateAtomic(u, v); v joins the output
//                  when it returns true.  Output sparse.
//   dense (pull):  for each vertex v with f.Cond(v), for each in-edge
//                  (u, v) with u in the frontier, f.Update(u, v) (v is
//                  updated by one worker only, so no atomics); v joins the
//                  output when any returns true; the scan of v's in-edges
//                  stops once f.Cond(v) turns false.  Output dense.
// Dense is chosen when |frontier| + out-degrees(frontier) > |E| / 20.
//
// The functor F provides
//   bool Update(VertexId s, VertexId d);        // dense mode, no races on d
//   bool UpdateAtomic(VertexId s, VertexId d);  // sparse mode, concurrent
//   bool Cond(VertexId d);                      // is d still interested
// UpdateAtomic must return true at most once per d per call if the output
// should have no duplicates (the sparse output keeps what it returns).
//
// Thread-safety: runs on every worker of `workers`; the functor's methods
// are called concurrently.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "pulse/graph/csr_graph.h"
#include "pulse/graph/vertex_subset.h"
#include "pulse/graph/workers.h"

namespace pulse::graph {

enum class EdgeMapMode { kAuto, kSparse, kDense };

struct EdgeMapOptions {
  EdgeMapMode mode = EdgeMapMode::kAuto;
  // Dense when |frontier| + out-degrees > |E| / threshold_divisor (Ligra: 20).
  uint64_t threshold_divisor = 20;
  // false: the activated vertices are not collected (Ligra's no_output);
  // EdgeMap returns an empty subset.
  bool output = true;
};

// Counts of the modes EdgeMap chose, for tests and diagnostics.
struct EdgeMapCounts {
  std::atomic<uint64_t> sparse{0};
  std::atomic<uint64_t> dense{0};
};
// The process-wide counts (every EdgeMap call adds to them).
EdgeMapCounts& GlobalEdgeMapCounts();

// Sum of the out-degrees of the frontier's members.
uint64_t FrontierOutDegrees(const CsrGraph& g, const VertexSubset& frontier, Workers& workers);

template <typename F>
VertexSubset EdgeMapSparse(const CsrGraph& g, VertexSubset& frontier, F& f, Workers& workers, bool output) {
  frontier.ToSparse();
  const auto& ids = frontier.ids();
  std::vector<std::vector<VertexId>> parts(workers.threads());
  workers.ParallelFor(0, ids.size(), 64, [&](uint64_t lo, uint64_t hi, uint32_t worker) {
    auto& out = parts[worker];
    for (uint64_t i = lo; i < hi; ++i) {
      VertexId u = ids[i];
      for (const VertexId* e = g.out_begin(u), *end = g.out_end(u); e != end; ++e) {
        VertexId v = *e;
        if (f.Cond(v) && f.UpdateAtomic(u, v) && output) out.push_back(v);
      }
    }
  });
  GlobalEdgeMapCounts().sparse.fetch_add(1, std::memory_order_relaxed);
  if (!output) return VertexSubset(g.num_vertices());
  std::vector<VertexId> next;
  size_t total = 0;
  for (const auto& p : parts) total += p.size();
  next.reserve(total);
  for (const auto& p : parts) next.insert(next.end(), p.begin(), p.end());
  return VertexSubset::FromSparse(g.num_vertices(), std::move(next));
}

template <typename F>
VertexSubset EdgeMapDense(const CsrGraph& g, VertexSubset& frontier, F& f, Workers& workers, bool output) {
  frontier.ToDense();
  const auto& in = frontier.flags();
  uint64_t n = g.num_vertices();
  std::vector<uint8_t> next(output ? n : 0, 0);
  std::vector<uint64_t> counts(workers.threads(), 0);
  workers.ParallelFor(0, n, 1024, [&](uint64_t lo, uint64_t hi, uint32_t worker) {
    uint64_t c = 0;
    for (uint64_t vv = lo; vv < hi; ++vv) {
      VertexId v = static_cast<VertexId>(vv);
      if (!f.Cond(v)) continue;
      bool activated = false;
      for (const VertexId* e = g.in_begin(v), *end = g.in_end(v); e != end; ++e) {
        VertexId u = *e;
        if (in[u] && f.Update(u, v)) activated = true;
        if (!f.Cond(v)) break;
      }
      if (activated && output) {
        next[v] = 1;
        ++c;
      }
    }
    counts[worker] += c;
  });
  GlobalEdgeMapCounts().dense.fetch_add(1, std::memory_order_relaxed);
  if (!output) return VertexSubset(n);
  uint64_t count = 0;
  for (uint64_t c : counts) count += c;
  return VertexSubset::FromDense(n, std::move(next), count);
}

template <typename F>
VertexSubset EdgeMap(const CsrGraph& g, VertexSubset& frontier, F& f, Workers& workers,
                     const EdgeMapOptions& options = {}) {
  if (frontier.empty()) return VertexSubset(g.num_vertices());
  bool dense = options.mode == EdgeMapMode::kDense;
  if (options.mode == EdgeMapMode::kAuto) {
    uint64_t work = frontier.size() + FrontierOutDegrees(g, frontier, workers);
    dense = work > g.num_edges() / std::max<uint64_t>(options.threshold_divisor, 1);
  }
  return dense ? EdgeMapDense(g, frontier, f, workers, options.output)
               : EdgeMapSparse(g, frontier, f, workers, options.output);
}

}  // namespace pulse::graph
