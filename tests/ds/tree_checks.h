// Structural checks of a far ordered tree (pulse/ds/ordered_tree.h), made by
// reading its nodes with one-sided reads: BST order, parent links, and the
// invariant of its balancing scheme.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pulse/client.h"
#include "pulse/ds/ordered_tree.h"

namespace pulse::ds::testing {

struct TreeShape {
  std::vector<std::pair<uint64_t, uint64_t>> entries;  // in order
  uint64_t height = 0;                                 // nodes on the longest path
  std::vector<std::string> errors;                     // broken invariants
};

// Reads every node from `root` and checks parent links, key order and:
// red-black colours and black heights, AVL stored heights and balance, a
// scapegoat tree's depth bound (floor(log_{1/alpha}(max_size))), or nothing
// more for splay trees.
TreeShape CheckTree(Client* client, uint64_t root, TreeBalance balance, double alpha = 0,
                    uint64_t max_size = 0);

}  // namespace pulse::ds::testing
