// The balancing policies of the ordered trees (ordered_tree.h): how a tree
// restores its shape after a node is linked in or unlinked, and whether
// lookups restructure it.  One small file each: bst_red_black.cc,
// bst_avl.cc, bst_splay.cc, bst_scapegoat.cc.  All of them change the tree
// only through a BstEdit.
#pragma once

#include <cstdint>
#include <memory>

#include "ds/bst_edit.h"

namespace pulse::ds::internal {

class BstBalancer {
 public:
  virtual ~BstBalancer() = default;
  // `node` was just linked in as a leaf (meta 0); the tree holds `size` nodes.
  virtual void Inserted(BstEdit& edit, uint64_t node, uint64_t size) = 0;
  // A node with at most one child was unlinked: `child` (maybe 0) took its
  // place on the left (`left`) or right of `parent` (0: at the root).  `meta`
  // was the removed node's balancing word; the tree holds `size` nodes.
  virtual void Removed(BstEdit& edit, uint64_t parent, uint64_t child, bool left, uint64_t meta,
                       uint64_t size) = 0;
  // Whether lookups restructure the tree (Accessed() does something).
  virtual bool RestructuresOnAccess() const { return false; }
  // A lookup landed on `node`.
  virtual void Accessed(BstEdit& edit, uint64_t node) {}
};

std::unique_ptr<BstBalancer> NewRedBlackBalancer();
std::unique_ptr<BstBalancer> NewAvlBalancer();
std::unique_ptr<BstBalancer> NewSplayBalancer();
std::unique_ptr<BstBalancer> NewScapegoatBalancer(double alpha);
// The scapegoat balancer's max size (`balancer` must be a scapegoat one).
uint64_t ScapegoatMaxSize(const BstBalancer& balancer);
// floor(log_{1/alpha}(n)), 0 for n <= 1.
uint32_t ScapegoatDepthBound(double alpha, uint64_t n);

}  // namespace pulse::ds::internal
