// pulse::ds::AvlTree: a far-memory AVL tree of unique uint64 keys to uint64
// values, like boost::intrusive::avl_set keyed by uint64 (with a value).
//
// An OrderedTree (ordered_tree.h: node layout, offloaded reads, errors) with
// the interface of std::map (UniqueKeyTree).  Every node's balancing word is
// its subtree height; after each update the heights of every node's two
// subtrees differ by at most one (single and double rotations at the CPU
// node, retracing up the parent links until a height stops changing).
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches the tree and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  Destroying the tree does not free its
// far memory.
#pragma once

#include <memory>

#include "pulse/ds/ordered_tree.h"

namespace pulse::ds {

class AvlTree : public UniqueKeyTree {
 public:
  // An empty tree; `client` must outlive it.  Errors: InvalidArgument (no
  // client), Internal (an iterator failed to load).
  static Result<std::unique_ptr<AvlTree>> Create(Client* client,
                                                 const OrderedTreeOptions& options = {});

 private:
  using UniqueKeyTree::UniqueKeyTree;
};

}  // namespace pulse::ds
