// AVL balancing (AvlTree): the node's balancing word is its subtree height
// (a leaf is 1); the heights of every node's subtrees differ by at most one.
#include "ds/bst_balancer.h"

#include <algorithm>

namespace pulse::ds::internal {
namespace {

class AvlBalancer : public BstBalancer {
 public:
  void Inserted(BstEdit& e, uint64_t node, uint64_t) override {
    e.Mut(node).meta = 1;
    Retrace(e, e.Get(node).parent);
  }
  void Removed(BstEdit& e, uint64_t parent, uint64_t, bool, uint64_t, uint64_t) override {
    Retrace(e, parent);
  }

 private:
  static uint64_t Height(BstEdit& e, uint64_t node) { return node == 0 ? 0 : e.Get(node).meta; }
  static void UpdateHeight(BstEdit& e, uint64_t node) {
    const BstNode& n = e.Get(node);
    const uint64_t h = 1 + std::max(Height(e, n.left), Height(e, n.right));
    if (n.meta != h) e.Mut(node).meta = h;
  }
  // Restores the balance at `node` (its subtrees are AVL trees whose heights
  // differ by at most two); returns the subtree's new root.
  static uint64_t Fix(BstEdit& e, uint64_t node) {
    const uint64_t hl = Height(e, e.Get(node).left), hr = Height(e, e.Get(node).right);
    if (hl <= hr + 1 && hr <= hl + 1) {
      UpdateHeight(e, node);
      return node;
    }
    const bool left = hl > hr;  // the heavy side
    uint64_t child = e.Child(node, left);
    if (Height(e, e.Child(child, left)) < Height(e, e.Child(child, !left))) {
      const uint64_t inner = e.Child(child, !left);  // double rotation
      e.RotateUp(inner);
      UpdateHeight(e, child);
      child = inner;
    }
    e.RotateUp(child);
    UpdateHeight(e, node);
    UpdateHeight(e, child);
    return child;
  }
  // Walks up from `node`, fixing each node, until a subtree's height is as
  // it was before the update.
  static void Retrace(BstEdit& e, uint64_t node) {
    while (e.ok() && node != 0) {
      const uint64_t before = e.Get(node).meta;
      const uint64_t top = Fix(e, node);
      if (e.Get(top).meta == before) break;
      node = e.Get(top).parent;
    }
  }
};

}  // namespace

std::unique_ptr<BstBalancer> NewAvlBalancer() { return std::make_unique<AvlBalancer>(); }

}  // namespace pulse::ds::internal
