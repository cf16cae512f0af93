// Red-black balancing (Map, MultiMap, Set, MultiSet): the node's balancing
// word is its colour.  Invariants: the root is black, a red node has black
// children, every path from a node down to a null child has the same number
// of black nodes.
#include "ds/bst_balancer.h"

namespace pulse::ds::internal {
namespace {

constexpr uint64_t kRed = PULSE_DS_BST_RED;
constexpr uint64_t kBlack = PULSE_DS_BST_BLACK;

class RedBlackBalancer : public BstBalancer {
 public:
  void Inserted(BstEdit& e, uint64_t node, uint64_t) override {
    e.Mut(node).meta = kRed;
    // A red node under a red parent: recolour while the uncle is red, then
    // at most two rotations.
    for (;;) {
      uint64_t parent = e.Get(node).parent;
      if (!e.ok() || parent == 0 || e.Get(parent).meta == kBlack) break;
      const uint64_t grand = e.Get(parent).parent;  // a red parent is not the root
      const bool parent_left = e.Get(grand).left == parent;
      const uint64_t uncle = e.Child(grand, !parent_left);
      if (IsRed(e, uncle)) {
        e.Mut(parent).meta = kBlack;
        e.Mut(uncle).meta = kBlack;
        e.Mut(grand).meta = kRed;
        node = grand;
        continue;
      }
      if ((e.Get(parent).left == node) != parent_left) {  // inner grandchild
        e.RotateUp(node);
        std::swap(node, parent);
      }
      e.Mut(parent).meta = kBlack;
      e.Mut(grand).meta = kRed;
      e.RotateUp(parent);
      break;
    }
    SetBlack(e, e.root());
  }

  void Removed(BstEdit& e, uint64_t parent, uint64_t node, bool left, uint64_t meta,
               uint64_t) override {
    if (meta == kRed) return;  // black heights unchanged
    // `node` (maybe null) is short of one black on its paths.
    while (e.ok() && parent != 0 && !IsRed(e, node)) {
      uint64_t sibling = e.Child(parent, !left);  // non-null: its side has a black more
      if (IsRed(e, sibling)) {
        e.Mut(sibling).meta = kBlack;
        e.Mut(parent).meta = kRed;
        e.RotateUp(sibling);
        sibling = e.Child(parent, !left);
      }
      uint64_t near = e.Child(sibling, left), far = e.Child(sibling, !left);
      if (!IsRed(e, near) && !IsRed(e, far)) {
        e.Mut(sibling).meta = kRed;
        node = parent;
        parent = e.Get(node).parent;
        left = parent != 0 && e.Get(parent).left == node;
        continue;
      }
      if (!IsRed(e, far)) {
        e.Mut(near).meta = kBlack;
        e.Mut(sibling).meta = kRed;
        e.RotateUp(near);
        far = sibling;
        sibling = near;
      }
      e.Mut(sibling).meta = e.Get(parent).meta;
      e.Mut(parent).meta = kBlack;
      e.Mut(far).meta = kBlack;
      e.RotateUp(sibling);
      node = e.root();
      break;
    }
    SetBlack(e, node);
  }

 private:
  static bool IsRed(BstEdit& e, uint64_t node) { return node != 0 && e.Get(node).meta == kRed; }
  static void SetBlack(BstEdit& e, uint64_t node) {
    if (IsRed(e, node)) e.Mut(node).meta = kBlack;
  }
};

}  // namespace

std::unique_ptr<BstBalancer> NewRedBlackBalancer() { return std::make_unique<RedBlackBalancer>(); }

}  // namespace pulse::ds::internal
