// Single-source betweenness centrality (Ligra BC.C, Brandes' algorithm):
// a forward BFS counting shortest paths, keeping each level's frontier,
// then a backward sweep over the levels on the transposed graph that
// accumulates dependencies.  In Ligra's formulation the backward pass sums
// D(w) = (1 + delta(w)) / sigma(w) over successors, so
// delta(v) = sigma(v) * (D(v) - 1 / sigma(v)).
#include <atomic>
#include <cmath>

#include <fmt/format.h>

#include "pulse/graph/apps.h"
#include "pulse/graph/edge_map.h"

namespace pulse::graph {
namespace {

// Both passes add s's value into each unvisited d: path counts forward,
// dependencies backward.  d is activated by its first addition.
struct SumIntoUnvisited {
  double* sums;
  const uint8_t* visited;
  bool Update(VertexId s, VertexId d) {
    double old = sums[d];
    sums[d] += sums[s];
    return old == 0.0;
  }
  bool UpdateAtomic(VertexId s, VertexId d) {
    double old = std::atomic_ref<double>(sums[d]).fetch_add(sums[s], std::memory_order_relaxed);
    return old == 0.0;
  }
  bool Cond(VertexId d) { return std::atomic_ref<const uint8_t>(visited[d]).load(std::memory_order_relaxed) == 0; }
};

}  // namespace

Result<AppResult> RunBc(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options) {
  uint64_t n = g.num_vertices();
  if (options.root >= n) return Status::InvalidArgument(fmt::format("bc: root {} is not a vertex (n = {})", options.root, n));
  PULSE_ASSIGN_OR_RETURN(auto num_paths, SpaceArray<double>::Make(space, "bc_num_paths", n));
  PULSE_ASSIGN_OR_RETURN(auto visited, SpaceArray<uint8_t>::Make(space, "bc_visited", n));
  PULSE_ASSIGN_OR_RETURN(auto dependencies, SpaceArray<double>::Make(space, "bc_dependencies", n));
  AppResult r;
  r.app = App::kBc;
  num_paths[options.root] = 1.0;
  visited[options.root] = 1;
  std::vector<VertexSubset> levels;
  levels.push_back(VertexSubset::Single(n, options.root));
  for (;;) {
    SumIntoUnvisited f{num_paths.data(), visited.data()};
    VertexSubset next = EdgeMap(g, levels.back(), f, workers);
    if (next.empty()) break;
    VertexMap(next, workers, [&](VertexId v) { visited[v] = 1; });
    next.ToSparse();  // the levels are kept: lists cost |level|, flags n each
    levels.push_back(std::move(next));
  }
  r.rounds = static_cast<uint32_t>(levels.size());
  // Backward: the last level first, over the transpose.  num_paths becomes
  // its inverse (0 stays 0: unreached vertices take no part).
  ForEachVertex(n, workers, [&](VertexId v) {
    visited[v] = 0;
    num_paths[v] = num_paths[v] == 0.0 ? 0.0 : 1.0 / num_paths[v];
  });
  auto settle = [&](const VertexSubset& level) {
    VertexMap(level, workers, [&](VertexId v) {
      visited[v] = 1;
      dependencies[v] += num_paths[v];
    });
  };
  settle(levels.back());
  CsrGraph transpose = g.Transpose();
  for (size_t i = levels.size() - 1; i-- > 0;) {
    SumIntoUnvisited f{dependencies.data(), visited.data()};
    EdgeMap(transpose, levels[i + 1], f, workers, EdgeMapOptions{.output = false});
    settle(levels[i]);
  }
  ForEachVertex(n, workers, [&](VertexId v) {
    double inverse = num_paths[v];
    dependencies[v] = inverse == 0.0 ? 0.0 : (dependencies[v] - inverse) / inverse;
  });
  dependencies[options.root] = 0.0;  // Brandes: the source's own dependency is not betweenness
  if (options.on_computed) options.on_computed();
  r.values.assign(dependencies.data(), dependencies.data() + n);
  return r;
}

}  // namespace pulse::graph
