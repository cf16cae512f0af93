#include "pulse/graph/edge_map.h"

namespace pulse::graph {

EdgeMapCounts& GlobalEdgeMapCounts() {
  static EdgeMapCounts counts;
  return counts;
}

uint64_t FrontierOutDegrees(const CsrGraph& g, const VertexSubset& frontier, Workers& workers) {
  std::vector<uint64_t> sums(workers.threads(), 0);
  if (frontier.is_dense()) {
    const auto& flags = frontier.flags();
    workers.ParallelFor(0, g.num_vertices(), 4096, [&](uint64_t lo, uint64_t hi, uint32_t worker) {
      uint64_t s = 0;
      for (uint64_t v = lo; v < hi; ++v)
        if (flags[v]) s += g.out_degree(static_cast<VertexId>(v));
      sums[worker] += s;
    });
  } else {
    const auto& ids = frontier.ids();
    workers.ParallelFor(0, ids.size(), 1024, [&](uint64_t lo, uint64_t hi, uint32_t worker) {
      uint64_t s = 0;
      for (uint64_t i = lo; i < hi; ++i) s += g.out_degree(ids[i]);
      sums[worker] += s;
    });
  }
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  return total;
}

}  // namespace pulse::graph
