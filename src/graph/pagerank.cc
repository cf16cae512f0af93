// PageRank (Ligra PageRank.C): every vertex is in the frontier each
// iteration, so the edge map runs dense (pull): each vertex sums its
// in-neighbours' rank shares without atomics.
#include <atomic>
#include <cmath>

#include <fmt/format.h>

#include "pulse/graph/apps.h"
#include "pulse/graph/edge_map.h"

namespace pulse::graph {
namespace {

struct PageRankUpdate {
  const CsrGraph* g;
  const double* current;
  double* next;
  bool Update(VertexId s, VertexId d) {
    next[d] += current[s] / static_cast<double>(g->out_degree(s));
    return true;
  }
  bool UpdateAtomic(VertexId s, VertexId d) {
    std::atomic_ref<double>(next[d]).fetch_add(current[s] / static_cast<double>(g->out_degree(s)),
                                               std::memory_order_relaxed);
    return true;
  }
  bool Cond(VertexId) { return true; }
};

}  // namespace

Result<AppResult> RunPageRank(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options) {
  uint64_t n = g.num_vertices();
  AppResult r;
  r.app = App::kPageRank;
  if (n == 0) return r;
  PULSE_ASSIGN_OR_RETURN(auto current, SpaceArray<double>::Make(space, "pagerank_current", n));
  PULSE_ASSIGN_OR_RETURN(auto next, SpaceArray<double>::Make(space, "pagerank_next", n));
  const double init = 1.0 / static_cast<double>(n);
  const double base = (1.0 - options.pagerank_damping) / static_cast<double>(n);
  ForEachVertex(n, workers, [&](VertexId v) { current[v] = init; });
  const uint64_t grain = 4096;
  std::vector<double> chunk_error((n + grain - 1) / grain);
  while (r.rounds < options.pagerank_max_iterations) {
    ++r.rounds;
    VertexSubset all = VertexSubset::All(n);
    PageRankUpdate f{&g, current.data(), next.data()};
    EdgeMap(g, all, f, workers, EdgeMapOptions{.output = false});
    // Damping and the L1 change, summed per chunk then in chunk order so
    // the result does not depend on which worker ran which chunk.
    workers.ParallelFor(0, n, grain, [&](uint64_t lo, uint64_t hi, uint32_t) {
      double err = 0;
      for (uint64_t v = lo; v < hi; ++v) {
        next[v] = base + options.pagerank_damping * next[v];
        err += std::fabs(next[v] - current[v]);
      }
      chunk_error[lo / grain] = err;
    });
    double error = 0;
    for (double e : chunk_error) error += e;
    std::swap(current, next);
    if (error < options.pagerank_epsilon) break;
    ForEachVertex(n, workers, [&](VertexId v) { next[v] = 0; });
  }
  if (options.on_computed) options.on_computed();
  r.values.assign(current.data(), current.data() + n);
  return r;
}

}  // namespace pulse::graph
