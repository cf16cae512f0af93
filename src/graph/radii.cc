// Radii estimation (Ligra Radii.C): a BFS from up to 64 sampled sources at
// once, one bit per source in each vertex's visited mask.  A vertex's
// estimate is the last round in which its mask grew, i.e. its distance from
// the farthest sampled source that reaches it.
#include <algorithm>
#include <atomic>
#include <unordered_set>

#include <fmt/format.h>

#include "pulse/graph/apps.h"
#include "pulse/graph/edge_map.h"
#include "pulse/graph/random.h"

namespace pulse::graph {
namespace {

struct RadiiUpdate {
  const uint64_t* visited;
  uint64_t* next_visited;
  int32_t* radii;
  int32_t round;
  bool Update(VertexId s, VertexId d) {
    uint64_t to_write = visited[d] | visited[s];
    if (visited[d] == to_write) return false;
    next_visited[d] |= to_write;
    if (radii[d] == round) return false;
    radii[d] = round;
    return true;
  }
  bool UpdateAtomic(VertexId s, VertexId d) {
    uint64_t to_write = visited[d] | visited[s];
    if (visited[d] == to_write) return false;
    std::atomic_ref<uint64_t>(next_visited[d]).fetch_or(to_write, std::memory_order_relaxed);
    int32_t old = std::atomic_ref<int32_t>(radii[d]).load(std::memory_order_relaxed);
    // Only the update that moves radii[d] to this round activates d.
    return old != round &&
           std::atomic_ref<int32_t>(radii[d]).compare_exchange_strong(old, round, std::memory_order_relaxed);
  }
  bool Cond(VertexId) { return true; }
};

}  // namespace

std::vector<VertexId> SampleRadiiSources(uint64_t n, uint32_t count, uint64_t seed) {
  count = std::min<uint32_t>(count, 64);
  std::vector<VertexId> sources;
  if (n <= count) {
    for (uint64_t v = 0; v < n; ++v) sources.push_back(static_cast<VertexId>(v));
    return sources;
  }
  SplitMix64 rng(seed);
  std::unordered_set<VertexId> taken;
  while (sources.size() < count) {
    auto v = static_cast<VertexId>(rng.Below(n));
    if (taken.insert(v).second) sources.push_back(v);
  }
  return sources;
}

Result<AppResult> RunRadii(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options) {
  uint64_t n = g.num_vertices();
  PULSE_ASSIGN_OR_RETURN(auto visited, SpaceArray<uint64_t>::Make(space, "radii_visited", n));
  PULSE_ASSIGN_OR_RETURN(auto next_visited, SpaceArray<uint64_t>::Make(space, "radii_next_visited", n));
  PULSE_ASSIGN_OR_RETURN(auto radii, SpaceArray<int32_t>::Make(space, "radii", n));
  ForEachVertex(n, workers, [&](VertexId v) { radii[v] = -1; });
  AppResult r;
  r.app = App::kRadii;
  r.sources = SampleRadiiSources(n, options.radii_sources, options.radii_seed);
  for (size_t i = 0; i < r.sources.size(); ++i) {
    VertexId s = r.sources[i];
    visited[s] |= uint64_t{1} << i;
    next_visited[s] |= uint64_t{1} << i;
    radii[s] = 0;
  }
  VertexSubset frontier = VertexSubset::FromSparse(n, r.sources);
  int32_t round = 0;
  while (!frontier.empty()) {
    ++round;
    RadiiUpdate f{visited.data(), next_visited.data(), radii.data(), round};
    frontier = EdgeMap(g, frontier, f, workers);
    VertexMap(frontier, workers, [&](VertexId v) { visited[v] = next_visited[v]; });
  }
  r.rounds = static_cast<uint32_t>(round);
  if (options.on_computed) options.on_computed();
  r.labels.assign(radii.data(), radii.data() + n);
  return r;
}

}  // namespace pulse::graph
