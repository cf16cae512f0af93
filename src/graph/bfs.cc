// BFS (Ligra BFS.C): the frontier claims unvisited neighbours, each parent
// set once (a compare-and-swap in push mode).
#include <atomic>

#include <fmt/format.h>

#include "pulse/graph/apps.h"
#include "pulse/graph/edge_map.h"

namespace pulse::graph {
namespace {

struct BfsUpdate {
  VertexId* parents;
  bool Update(VertexId s, VertexId d) {
    if (parents[d] != kNoVertex) return false;
    parents[d] = s;
    return true;
  }
  bool UpdateAtomic(VertexId s, VertexId d) {
    VertexId expected = kNoVertex;
    return std::atomic_ref<VertexId>(parents[d]).compare_exchange_strong(expected, s, std::memory_order_relaxed);
  }
  bool Cond(VertexId d) { return std::atomic_ref<VertexId>(parents[d]).load(std::memory_order_relaxed) == kNoVertex; }
};

}  // namespace

// Each vertex's depth is its parent's plus one, found by walking up to a
// vertex whose depth is known.
Result<std::vector<int64_t>> BfsDepthsFromParents(const std::vector<VertexId>& parents, VertexId root) {
  uint64_t n = parents.size();
  std::vector<int64_t> depth(n, -1);
  depth[root] = 0;
  std::vector<VertexId> path;
  for (uint64_t v0 = 0; v0 < n; ++v0) {
    if (parents[v0] == kNoVertex || depth[v0] >= 0) continue;
    path.clear();
    VertexId v = static_cast<VertexId>(v0);
    while (depth[v] < 0) {
      path.push_back(v);
      if (path.size() > n || parents[v] == kNoVertex || parents[v] >= n)
        return Status::Internal(fmt::format("bfs: the parent chain from vertex {} does not reach the root", v0));
      v = parents[v];
    }
    int64_t d = depth[v];
    for (auto it = path.rbegin(); it != path.rend(); ++it) depth[*it] = ++d;
  }
  return depth;
}

Result<AppResult> RunBfs(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options) {
  uint64_t n = g.num_vertices();
  if (options.root >= n) return Status::InvalidArgument(fmt::format("bfs: root {} is not a vertex (n = {})", options.root, n));
  PULSE_ASSIGN_OR_RETURN(auto parents, SpaceArray<VertexId>::Make(space, "bfs_parents", n));
  ForEachVertex(n, workers, [&](VertexId v) { parents[v] = kNoVertex; });
  parents[options.root] = options.root;
  AppResult r;
  r.app = App::kBfs;
  VertexSubset frontier = VertexSubset::Single(n, options.root);
  BfsUpdate f{parents.data()};
  while (!frontier.empty()) {
    frontier = EdgeMap(g, frontier, f, workers);
    ++r.rounds;
  }
  if (options.on_computed) options.on_computed();
  r.parents.assign(parents.data(), parents.data() + n);
  PULSE_ASSIGN_OR_RETURN(r.labels, BfsDepthsFromParents(r.parents, options.root));
  return r;
}

}  // namespace pulse::graph
