#include "pulse/graph/generators.h"

#include <numeric>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pulse/graph/random.h"

namespace pulse::graph {

Result<EdgeList> GenerateRmat(const RmatOptions& o) {
  if (o.scale < 1 || o.scale > 31) return Status::InvalidArgument(fmt::format("rmat: scale {} is outside [1, 31]", o.scale));
  if (o.a < 0 || o.b < 0 || o.c < 0 || o.a + o.b + o.c > 1.0)
    return Status::InvalidArgument(fmt::format("rmat: probabilities a={} b={} c={} are negative or sum above 1", o.a, o.b, o.c));
  EdgeList list;
  list.n = uint64_t{1} << o.scale;
  uint64_t m = list.n * o.edge_factor;
  list.edges.reserve(m);
  SplitMix64 rng(o.seed);
  const double ab = o.a + o.b, abc = o.a + o.b + o.c;
  for (uint64_t i = 0; i < m; ++i) {
    uint64_t s = 0, d = 0;
    for (uint32_t bit = 0; bit < o.scale; ++bit) {
      double r = rng.Unit();
      // a: (0,0)  b: (0,1)  c: (1,0)  d: (1,1)
      uint64_t sb = r >= ab ? 1 : 0;
      uint64_t db = (r >= o.a && r < ab) || r >= abc ? 1 : 0;
      s = (s << 1) | sb;
      d = (d << 1) | db;
    }
    list.edges.emplace_back(static_cast<VertexId>(s), static_cast<VertexId>(d));
  }
  if (o.permute) {
    std::vector<VertexId> perm(list.n);
    std::iota(perm.begin(), perm.end(), 0);
    for (uint64_t i = list.n - 1; i > 0; --i) std::swap(perm[i], perm[rng.Below(i + 1)]);  // Fisher-Yates
    for (auto& [s, d] : list.edges) {
      s = perm[s];
      d = perm[d];
    }
  }
  return list;
}

Result<EdgeList> GenerateUniform(uint64_t n, uint64_t edges, uint64_t seed) {
  if (n == 0 || n >= kNoVertex) return Status::InvalidArgument(fmt::format("uniform: n = {} is outside [1, 2^32 - 1)", n));
  EdgeList list;
  list.n = n;
  list.edges.reserve(edges);
  SplitMix64 rng(seed);
  for (uint64_t i = 0; i < edges; ++i) {
    auto s = static_cast<VertexId>(rng.Below(n));
    auto d = static_cast<VertexId>(rng.Below(n));
    list.edges.emplace_back(s, d);
  }
  return list;
}

}  // namespace pulse::graph
