// The five graph applications of seed 003 (Ligra's versions, written over
// the edge map of edge_map.h): BFS, PageRank, Radii, BC and Connected
// Components.  Each keeps its per-vertex arrays in the ArraySpace it is
// given (next to the graph), runs on `workers`, and copies its answer into
// local memory (AppResult) for verification.
//
// Thread-safety: one call at a time per Workers; the graph may be shared.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pulse/graph/array_space.h"
#include "pulse/graph/csr_graph.h"
#include "pulse/graph/workers.h"
#include "pulse/status.h"

namespace pulse::graph {

enum class App { kBfs, kPageRank, kRadii, kBc, kComponents };

// "bfs", "pagerank", "radii", "bc", "cc".
std::string_view AppName(App app);
// The app of a name above.  Errors: InvalidArgument naming the unknown name.
Result<App> AppFromName(std::string_view name);
// The five, in the order above.
std::vector<App> AllApps();

struct AppOptions {
  VertexId root = 0;                    // BFS's and BC's source
  uint32_t pagerank_max_iterations = 100;
  double pagerank_epsilon = 1e-7;       // stop when the L1 change falls below (0: run every iteration)
  double pagerank_damping = 0.85;
  uint32_t radii_sources = 64;          // sampled sources, at most 64 (one bit each)
  uint64_t radii_seed = 1;
  // Called once the computation is done, before the answer is copied into
  // the AppResult (the benchmark stops its clock and samples memory here).
  std::function<void()> on_computed;
};

// An application's answer, in local memory.
struct AppResult {
  App app = App::kBfs;
  // BFS: depth from the root (-1: unreached), derived from `parents`.
  // Radii: the estimate max over sampled sources s reaching v of dist(s, v)
  //        (-1: no source reaches v).
  // CC: the component's label, its smallest vertex id.
  std::vector<int64_t> labels;
  // PageRank: ranks.  BC: the single-source dependency of each vertex
  // (Brandes' delta_root(v); 0 for the root and for unreached vertices).
  std::vector<double> values;
  std::vector<VertexId> parents;  // BFS: the BFS tree (kNoVertex: unreached; root's parent is itself)
  std::vector<VertexId> sources;  // Radii: the sampled sources
  uint32_t rounds = 0;            // edge-map rounds (PageRank: iterations)
};

// Breadth-first search from options.root (Ligra BFS.C): parents.
Result<AppResult> RunBfs(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options);
// PageRank (Ligra PageRank.C): p' = (1 - d) / n + d * sum over in-edges
// (u, v) of p(u) / outdeg(u), from p = 1/n, until the L1 change is below
// epsilon or max iterations.  Dangling vertices' rank is not redistributed
// (as Ligra; networkx redistributes it, so they agree on graphs without
// dangling vertices).
Result<AppResult> RunPageRank(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options);
// Radii estimation (Ligra Radii.C): a multi-source BFS from
// min(radii_sources, n) distinct sources drawn with radii_seed, one bit of
// a 64-bit mask each.
Result<AppResult> RunRadii(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options);
// The sources RunRadii uses: every vertex when n <= count, else `count`
// (at most 64) distinct vertices drawn with `seed`, in draw order.
std::vector<VertexId> SampleRadiiSources(uint64_t n, uint32_t count, uint64_t seed);
// Betweenness centrality from one source (Ligra BC.C, Brandes): path
// counts forward, dependencies backward over the transpose.
Result<AppResult> RunBc(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options);
// Connected components by label propagation (Ligra Components.C).  Needs a
// symmetric graph: FailedPrecondition otherwise.
Result<AppResult> RunComponents(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options);

// Runs `app`.  Errors: those of the application (InvalidArgument for a
// root >= n, FailedPrecondition for CC on a directed graph) and of the space.
Result<AppResult> RunApp(App app, const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options);

// Whether `actual` is the same answer as `expected`: labels equal exactly
// (BFS depths, radii, component labels: parallel runs may pick different
// BFS parents but not different depths), values within `tolerance`
// relative to max(1, |expected|), sources equal.  Errors: FailedPrecondition
// naming the first differing vertex and both values.
Status CompareResults(const AppResult& expected, const AppResult& actual, double tolerance = 1e-9);

// Depths from a BFS parent array (kNoVertex: unreached; the root is its own
// parent).  Errors: Internal naming a vertex whose parent chain does not
// reach the root.
Result<std::vector<int64_t>> BfsDepthsFromParents(const std::vector<VertexId>& parents, VertexId root);

// Checks a BFS tree against the graph: the root is its own parent, every
// other reached vertex's parent is an in-neighbour one level closer to the
// root.  Errors: FailedPrecondition naming the vertex.
Status CheckBfsTree(const CsrGraph& g, VertexId root, const AppResult& bfs);

}  // namespace pulse::graph
