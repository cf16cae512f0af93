#include "graph/reference.h"

#include <algorithm>
#include <deque>
#include <numeric>

namespace pulse::graph::testing {

RefGraph MakeRefGraph(const EdgeList& list, bool symmetrize) {
  RefGraph g;
  g.out.resize(list.n);
  g.in.resize(list.n);
  auto add = [&](VertexId s, VertexId d) {
    if (s == d) return;
    g.out[s].push_back(d);
    g.in[d].push_back(s);
  };
  for (auto [s, d] : list.edges) {
    add(s, d);
    if (symmetrize) add(d, s);
  }
  for (auto* lists : {&g.out, &g.in})
    for (auto& l : *lists) {
      std::sort(l.begin(), l.end());
      l.erase(std::unique(l.begin(), l.end()), l.end());
    }
  return g;
}

std::vector<int64_t> RefBfsDepths(const RefGraph& g, VertexId root) {
  std::vector<int64_t> depth(g.out.size(), -1);
  std::deque<VertexId> queue{root};
  depth[root] = 0;
  while (!queue.empty()) {
    VertexId u = queue.front();
    queue.pop_front();
    for (VertexId v : g.out[u])
      if (depth[v] < 0) {
        depth[v] = depth[u] + 1;
        queue.push_back(v);
      }
  }
  return depth;
}

std::vector<double> RefPageRank(const RefGraph& g, uint32_t iterations, double damping) {
  size_t n = g.out.size();
  std::vector<double> p(n, 1.0 / static_cast<double>(n)), next(n);
  for (uint32_t it = 0; it < iterations; ++it) {
    for (size_t v = 0; v < n; ++v) {
      double sum = 0;
      for (VertexId u : g.in[v]) sum += p[u] / static_cast<double>(g.out[u].size());
      next[v] = (1.0 - damping) / static_cast<double>(n) + damping * sum;
    }
    p.swap(next);
  }
  return p;
}

std::vector<int64_t> RefRadii(const RefGraph& g, const std::vector<VertexId>& sources) {
  std::vector<int64_t> radii(g.out.size(), -1);
  for (VertexId s : sources) {
    auto depth = RefBfsDepths(g, s);
    for (size_t v = 0; v < depth.size(); ++v) radii[v] = std::max(radii[v], depth[v]);
  }
  return radii;
}

std::vector<double> RefBcDependencies(const RefGraph& g, VertexId root) {
  size_t n = g.out.size();
  std::vector<double> sigma(n, 0), delta(n, 0);
  std::vector<int64_t> dist(n, -1);
  std::vector<std::vector<VertexId>> preds(n);
  std::vector<VertexId> order;
  std::deque<VertexId> queue{root};
  sigma[root] = 1;
  dist[root] = 0;
  while (!queue.empty()) {
    VertexId u = queue.front();
    queue.pop_front();
    order.push_back(u);
    for (VertexId v : g.out[u]) {
      if (dist[v] < 0) {
        dist[v] = dist[u] + 1;
        queue.push_back(v);
      }
      if (dist[v] == dist[u] + 1) {
        sigma[v] += sigma[u];
        preds[v].push_back(u);
      }
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (VertexId u : preds[*it]) delta[u] += sigma[u] / sigma[*it] * (1 + delta[*it]);
  delta[root] = 0;
  return delta;
}

std::vector<int64_t> RefComponents(const RefGraph& g) {
  size_t n = g.out.size();
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (size_t u = 0; u < n; ++u)
    for (VertexId v : g.out[u]) {
      size_t a = find(u), b = find(v);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the root stays the smallest id
    }
  std::vector<int64_t> label(n);
  for (size_t v = 0; v < n; ++v) label[v] = static_cast<int64_t>(find(v));
  return label;
}

}  // namespace pulse::graph::testing
