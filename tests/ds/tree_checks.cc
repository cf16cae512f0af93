#include "ds/tree_checks.h"

#include <algorithm>

#include <fmt/format.h>

#include "ds/iterators/ds_nodes.h"
#include "pulse/ds/scapegoat_tree.h"

namespace pulse::ds::testing {
namespace {

struct Checker {
  Client* client;
  TreeBalance balance;
  TreeShape shape;

  void Error(std::string e) {
    if (shape.errors.size() < 20) shape.errors.push_back(std::move(e));
  }

  // Visits the subtree at addr (depth 0 at the root); returns its height in
  // nodes, and its black height for red-black trees in *black.
  uint64_t Visit(uint64_t addr, uint64_t parent, uint64_t depth, uint64_t* black) {
    *black = 1;
    if (addr == 0) return 0;
    if (depth > 100000) {
      Error("deeper than 100000: a cycle?");
      return 0;
    }
    pulse_ds_bst_node n;
    Status s = client->Read(addr, &n, sizeof(n));
    if (!s.ok()) {
      Error(fmt::format("read {:#x}: {}", addr, s.ToString()));
      return 0;
    }
    if (n.parent != parent) {
      Error(fmt::format("node {:#x} (key {}): parent {:#x}, expected {:#x}", addr, n.key, n.parent,
                        parent));
    }
    uint64_t black_left = 0, black_right = 0;
    const uint64_t hl = Visit(n.left, addr, depth + 1, &black_left);
    shape.entries.emplace_back(n.key, n.value);
    const uint64_t hr = Visit(n.right, addr, depth + 1, &black_right);
    const uint64_t h = 1 + std::max(hl, hr);
    if (balance == TreeBalance::kAvl) {
      if (n.meta != h) Error(fmt::format("AVL key {}: stored height {}, real {}", n.key, n.meta, h));
      if (hl > hr + 1 || hr > hl + 1) {
        Error(fmt::format("AVL key {}: subtree heights {} and {}", n.key, hl, hr));
      }
    }
    if (balance == TreeBalance::kRedBlack) {
      if (n.meta != PULSE_DS_BST_RED && n.meta != PULSE_DS_BST_BLACK) {
        Error(fmt::format("red-black key {}: colour {}", n.key, n.meta));
      }
      if (black_left != black_right) {
        Error(fmt::format("red-black key {}: black heights {} and {}", n.key, black_left,
                          black_right));
      }
      if (n.meta == PULSE_DS_BST_RED) {
        for (uint64_t c : {n.left, n.right}) {
          pulse_ds_bst_node child;
          if (c != 0 && client->Read(c, &child, sizeof(child)).ok() &&
              child.meta == PULSE_DS_BST_RED) {
            Error(fmt::format("red-black key {}: red node with a red child", n.key));
          }
        }
      }
      *black = black_left + (n.meta == PULSE_DS_BST_BLACK ? 1 : 0);
    }
    return h;
  }
};

}  // namespace

TreeShape CheckTree(Client* client, uint64_t root, TreeBalance balance, double alpha,
                    uint64_t max_size) {
  Checker c{client, balance, {}};
  uint64_t black = 0;
  c.shape.height = c.Visit(root, 0, 0, &black);
  for (size_t i = 1; i < c.shape.entries.size(); ++i) {
    if (c.shape.entries[i - 1].first > c.shape.entries[i].first) {
      c.Error(fmt::format("keys out of order at position {}: {} before {}", i,
                          c.shape.entries[i - 1].first, c.shape.entries[i].first));
    }
  }
  if (balance == TreeBalance::kRedBlack && root != 0) {
    pulse_ds_bst_node n;
    if (client->Read(root, &n, sizeof(n)).ok() && n.meta != PULSE_DS_BST_BLACK) {
      c.Error("red-black: the root is red");
    }
  }
  if (balance == TreeBalance::kScapegoat && c.shape.height > 0) {
    const uint64_t bound = ScapegoatTree::DepthBound(alpha, max_size);
    if (c.shape.height - 1 > bound) {
      c.Error(fmt::format("scapegoat: depth {} > floor(log_1/{}({})) = {}", c.shape.height - 1,
                          alpha, max_size, bound));
    }
  }
  return c.shape;
}

}  // namespace pulse::ds::testing
