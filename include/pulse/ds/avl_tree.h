// pulse::ds::AvlTree: a far-memory AVL tree of unique uint64 keys to uint64
// values, like boost::intrusive::avl_set keyed by uint64 (with a value).
//
// An OrderedTree (ordered_tree.h: node layout, offloaded reads, errors) with
// the interface of std::map (UniqueKeyTree).  Every node's balancing word is
// its subtree height; after each update the heights of every node's two
// subtrees differ by at most one (single and double rotations at the CPU
// node, retracing up the parent links until a height stops changing).
//
// Thread-safety: not thread-safe; writers must hold the library's lock
// (later).  Destroying the tree does not free its far memory.
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
