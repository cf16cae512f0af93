// pulse::ds::ScapegoatTree: a far-memory scapegoat tree of unique uint64
// keys to uint64 values, like boost::intrusive::sg_set keyed by uint64 (with
// a value).
//
// An OrderedTree (ordered_tree.h: node layout, offloaded reads, errors) with
// the interface of std::map (UniqueKeyTree).  Nodes carry no balancing data.
// An insertion deeper than log_{1/alpha}(size) walks up from the new node,
// counting subtree sizes by one-sided reads, to the first ancestor x whose
// distance to the new node exceeds log_{1/alpha}(size(x)) (the scapegoat)
// and rebuilds x's subtree perfectly balanced, reusing its nodes.  When
// erases shrink the tree below alpha * max_size() the whole tree is rebuilt.
// Invariant: no node is deeper than floor(log_{1/alpha}(max_size())) (the
// root has depth 0).
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches the tree and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  Destroying the tree does not free its
// far memory.
#pragma once

#include <cstdint>
#include <memory>

#include "pulse/ds/ordered_tree.h"

namespace pulse::ds {

class ScapegoatTree : public UniqueKeyTree {
 public:
  // An empty tree; `client` must outlive it.  Errors: InvalidArgument (no
  // client, or options.scapegoat_alpha outside (0.5, 1)), Internal (an
  // iterator failed to load).
  static Result<std::unique_ptr<ScapegoatTree>> Create(Client* client,
                                                       const OrderedTreeOptions& options = {});

  double alpha() const { return options_.scapegoat_alpha; }
  // The largest size since the whole tree was last rebuilt.
  uint64_t max_size() const;
  // floor(log_{1/alpha}(n)): the depth bound for a tree of max_size() n.
  static uint32_t DepthBound(double alpha, uint64_t n);

 private:
  using UniqueKeyTree::UniqueKeyTree;
};

}  // namespace pulse::ds
