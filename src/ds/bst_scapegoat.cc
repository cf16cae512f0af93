// Scapegoat balancing (ScapegoatTree, Galperin and Rivest): no balancing
// word.  An insertion deeper than h(size) = floor(log_{1/alpha}(size))
// rebuilds the subtree of its scapegoat: the first ancestor x whose
// distance i to the new node exceeds h(size(x)).  The rebuilt subtree has
// height floor(log2(size(x))) <= h(size(x)) < i, so every node in it ends up
// shallower than the new node was, and the tree stays within
// h(max_size) levels.  Erases rebuild the whole tree when the size falls
// below alpha * max_size.
#include "ds/bst_balancer.h"

#include <algorithm>
#include <cmath>

namespace pulse::ds::internal {
namespace {

class ScapegoatBalancer : public BstBalancer {
 public:
  explicit ScapegoatBalancer(double alpha) : alpha_(alpha) {}

  void Inserted(BstEdit& e, uint64_t node, uint64_t size) override {
    max_size_ = std::max<uint64_t>(max_size_, size);
    uint64_t depth = 0;
    for (uint64_t n = e.Get(node).parent; e.ok() && n != 0; n = e.Get(n).parent) ++depth;
    if (depth <= ScapegoatDepthBound(alpha_, size)) return;
    uint64_t child = node, child_size = 1;
    for (uint64_t distance = 1; e.ok(); ++distance) {
      const uint64_t parent = e.Get(child).parent;
      if (parent == 0) return;  // unreachable: the root qualifies
      const bool left = e.Get(parent).left == child;
      const uint64_t parent_size = child_size + 1 + e.InOrder(e.Child(parent, !left)).size();
      if (distance > ScapegoatDepthBound(alpha_, parent_size)) {
        Rebuild(e, parent);
        return;
      }
      child = parent;
      child_size = parent_size;
    }
  }

  void Removed(BstEdit& e, uint64_t, uint64_t, bool, uint64_t, uint64_t size) override {
    if (static_cast<double>(size) >= alpha_ * static_cast<double>(max_size_)) return;
    if (e.root() != 0) Rebuild(e, e.root());
    max_size_ = size;
  }

  uint64_t max_size() const { return max_size_; }

 private:
  // Relinks the subtree at `top` into a perfectly balanced one, reusing its
  // nodes; writes only the nodes whose links change.
  static void Rebuild(BstEdit& e, uint64_t top) {
    const uint64_t parent = e.Get(top).parent;
    const bool left = parent != 0 && e.Get(parent).left == top;
    const std::vector<uint64_t> nodes = e.InOrder(top);
    if (!e.ok()) return;
    const uint64_t root = Build(e, nodes, 0, nodes.size(), parent);
    e.Link(parent, left, root);
  }
  // The balanced tree of nodes[lo, hi) under `parent`; returns its root.
  static uint64_t Build(BstEdit& e, const std::vector<uint64_t>& nodes, size_t lo, size_t hi,
                        uint64_t parent) {
    if (lo == hi) return 0;
    const size_t mid = lo + (hi - lo) / 2;
    const uint64_t n = nodes[mid];
    const uint64_t l = Build(e, nodes, lo, mid, n);
    const uint64_t r = Build(e, nodes, mid + 1, hi, n);
    const BstNode& cur = e.Get(n);
    if (cur.left != l || cur.right != r || cur.parent != parent) {
      BstNode& m = e.Mut(n);
      m.left = l;
      m.right = r;
      m.parent = parent;
    }
    return n;
  }

  double alpha_;
  uint64_t max_size_ = 0;
};

}  // namespace

std::unique_ptr<BstBalancer> NewScapegoatBalancer(double alpha) {
  return std::make_unique<ScapegoatBalancer>(alpha);
}

uint64_t ScapegoatMaxSize(const BstBalancer& balancer) {
  return static_cast<const ScapegoatBalancer&>(balancer).max_size();
}

uint32_t ScapegoatDepthBound(double alpha, uint64_t n) {
  if (n <= 1) return 0;
  // A small epsilon keeps exact powers of 1/alpha from rounding down.
  return static_cast<uint32_t>(std::floor(std::log(static_cast<double>(n)) / std::log(1.0 / alpha) +
                                          1e-9));
}

}  // namespace pulse::ds::internal
