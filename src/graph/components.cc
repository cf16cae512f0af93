// Connected components by label propagation (Ligra Components.C): every
// vertex starts with its own id as label; each round the vertices whose
// label dropped push it to their neighbours, which keep the minimum.  At
// the fixpoint each vertex holds the smallest id of its component.
#include <atomic>

#include <fmt/format.h>

#include "pulse/graph/apps.h"
#include "pulse/graph/edge_map.h"

namespace pulse::graph {
namespace {

struct MinLabelUpdate {
  VertexId* ids;
  const VertexId* previous;  // labels at the start of the round
  // Dense mode: d is written by one worker only, but ids[s] may be another
  // worker's d, hence the relaxed atomic accesses.
  bool Update(VertexId s, VertexId d) {
    std::atomic_ref<VertexId> target(ids[d]);
    VertexId original = target.load(std::memory_order_relaxed);
    VertexId label = std::atomic_ref<VertexId>(ids[s]).load(std::memory_order_relaxed);
    if (label >= original) return false;
    target.store(label, std::memory_order_relaxed);
    return original == previous[d];
  }
  // Activates d only for the compare-and-swap that moves its label away
  // from the round's starting value: labels only fall, so that happens
  // once per round and the sparse output has no duplicates.
  bool UpdateAtomic(VertexId s, VertexId d) {
    VertexId label = std::atomic_ref<VertexId>(ids[s]).load(std::memory_order_relaxed);
    std::atomic_ref<VertexId> target(ids[d]);
    VertexId old = target.load(std::memory_order_relaxed);
    while (label < old) {
      if (target.compare_exchange_weak(old, label, std::memory_order_relaxed)) return old == previous[d];
    }
    return false;
  }
  bool Cond(VertexId) { return true; }
};

}  // namespace

Result<AppResult> RunComponents(const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options) {
  if (!g.symmetric())
    return Status::FailedPrecondition("cc: connected components need a symmetric graph (label propagation)");
  uint64_t n = g.num_vertices();
  PULSE_ASSIGN_OR_RETURN(auto ids, SpaceArray<VertexId>::Make(space, "cc_ids", n));
  PULSE_ASSIGN_OR_RETURN(auto previous, SpaceArray<VertexId>::Make(space, "cc_previous", n));
  ForEachVertex(n, workers, [&](VertexId v) { ids[v] = previous[v] = v; });
  AppResult r;
  r.app = App::kComponents;
  VertexSubset frontier = VertexSubset::All(n);
  while (!frontier.empty()) {
    VertexMap(frontier, workers, [&](VertexId v) { previous[v] = ids[v]; });
    MinLabelUpdate f{ids.data(), previous.data()};
    frontier = EdgeMap(g, frontier, f, workers);
    ++r.rounds;
  }
  if (options.on_computed) options.on_computed();
  r.labels.assign(ids.data(), ids.data() + n);
  return r;
}

}  // namespace pulse::graph
