// Plain sequential references for the graph applications, over adjacency
// lists built straight from an edge list (not from the CSR under test).
#pragma once

#include <cstdint>
#include <vector>

#include "pulse/graph/csr_graph.h"

namespace pulse::graph::testing {

struct RefGraph {
  std::vector<std::vector<VertexId>> out, in;  // sorted, no duplicates or self loops
};

// The graph FromEdges(list, symmetrize) should build.
RefGraph MakeRefGraph(const EdgeList& list, bool symmetrize);

std::vector<int64_t> RefBfsDepths(const RefGraph& g, VertexId root);
// `iterations` iterations of Ligra's PageRank (no early stop).
std::vector<double> RefPageRank(const RefGraph& g, uint32_t iterations, double damping);
// max over sources s reaching v of dist(s, v); -1 when none does.
std::vector<int64_t> RefRadii(const RefGraph& g, const std::vector<VertexId>& sources);
// Brandes' single-source dependencies delta_root(v) (0 for the root).
std::vector<double> RefBcDependencies(const RefGraph& g, VertexId root);
// The smallest vertex id of each vertex's component (union-find).
std::vector<int64_t> RefComponents(const RefGraph& g);

}  // namespace pulse::graph::testing
