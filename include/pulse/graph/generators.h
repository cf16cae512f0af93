// Synthetic graphs with fixed seeds: the same arguments give the same edge
// list on every machine (graph/random.h).  The benchmark's graphs come from
// here (`pulse graph gen`, scripts/graphs.sh); generated data is never
// committed.
//
// Thread-safety: the functions share no state.
#pragma once

#include <cstdint>

#include "pulse/graph/csr_graph.h"
#include "pulse/status.h"

namespace pulse::graph {

struct RmatOptions {
  uint32_t scale = 16;        // 2^scale vertices
  uint32_t edge_factor = 16;  // edge_factor * 2^scale edges drawn
  double a = 0.57, b = 0.19, c = 0.19;  // quadrant probabilities (d = 1 - a - b - c): Graph500's
  uint64_t seed = 1;
  // Relabel vertices by a random permutation (Graph500's Kronecker
  // generator does, so that degree does not follow the id).
  bool permute = true;
};

// An R-MAT / Graph500 Kronecker edge list (duplicates and self loops
// included, as drawn; CsrGraph::FromEdges drops them).  Errors:
// InvalidArgument for a scale outside [1, 31] or probabilities that are
// negative or sum above 1.
Result<EdgeList> GenerateRmat(const RmatOptions& options);

// `edges` directed edges with endpoints drawn uniformly from [0, n).
// Errors: InvalidArgument for n == 0 or n >= 2^32.
Result<EdgeList> GenerateUniform(uint64_t n, uint64_t edges, uint64_t seed);

}  // namespace pulse::graph
