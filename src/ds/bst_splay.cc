// Splay balancing (SplayTree): no balancing word; accessed, inserted and
// (the parents of) erased nodes are splayed to the root, which gives
// amortised O(log n) operations.
#include "ds/bst_balancer.h"

namespace pulse::ds::internal {
namespace {

class SplayBalancer : public BstBalancer {
 public:
  void Inserted(BstEdit& e, uint64_t node, uint64_t) override { Splay(e, node); }
  void Removed(BstEdit& e, uint64_t parent, uint64_t, bool, uint64_t, uint64_t) override {
    if (parent != 0) Splay(e, parent);
  }
  bool RestructuresOnAccess() const override { return true; }
  void Accessed(BstEdit& e, uint64_t node) override { Splay(e, node); }

 private:
  // Zig, zig-zig or zig-zag steps until `node` is the root.
  static void Splay(BstEdit& e, uint64_t node) {
    for (;;) {
      const uint64_t parent = e.Get(node).parent;
      if (!e.ok() || parent == 0) return;
      const uint64_t grand = e.Get(parent).parent;
      if (grand == 0) {
        e.RotateUp(node);
      } else if ((e.Get(grand).left == parent) == (e.Get(parent).left == node)) {
        e.RotateUp(parent);
        e.RotateUp(node);
      } else {
        e.RotateUp(node);
        e.RotateUp(node);
      }
    }
  }
};

}  // namespace

std::unique_ptr<BstBalancer> NewSplayBalancer() { return std::make_unique<SplayBalancer>(); }

}  // namespace pulse::ds::internal
