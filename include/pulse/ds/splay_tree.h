// pulse::ds::SplayTree: a far-memory splay tree of unique uint64 keys to
// uint64 values, like boost::intrusive::splay_set keyed by uint64 (with a
// value).
//
// An OrderedTree (ordered_tree.h: node layout, offloaded reads, errors) with
// the interface of std::map (UniqueKeyTree).  A splay tree restructures on
// access, but an offloaded lookup does not: it runs on the memory nodes,
// possibly beside other readers that must see a consistent tree, and a
// rotation rewrites nodes that may live on other memory nodes.  So every
// lookup is read-only where it runs and reports the node it landed on (the node found, or for a miss the last
// node of the descent); then, when splay_on_access is on (the default,
// OrderedTreeOptions::splay_on_access or set_splay_on_access()), the tree
// splays that node to the root here at the CPU node with Client::Read/Write
// (zig, zig-zig and zig-zag rotations along the parent links).  This keeps
// the amortised O(log n) bound of the splay tree for a single user: after
// Find(k), LowerBound(k), UpperBound(k) or Contains(k), the node landed on
// is the root.  AggregateRange(), Count() and Scan() never splay.  Updates
// always restructure: an insert splays the new node (an insert of a present
// key splays it only with splay_on_access), an erase splays the removed
// node's parent.  Turn splaying off when several readers share the tree: the
// lookups are then pure readers (the tree keeps whatever shape updates left).
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches the tree and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  With splay_on_access every lookup is
// a writer.  Destroying the tree does not free its far memory.
#pragma once

#include <memory>

#include "pulse/ds/ordered_tree.h"

namespace pulse::ds {

class SplayTree : public UniqueKeyTree {
 public:
  // An empty tree; `client` must outlive it.  Errors: InvalidArgument (no
  // client), Internal (an iterator failed to load).
  static Result<std::unique_ptr<SplayTree>> Create(Client* client,
                                                   const OrderedTreeOptions& options = {});

  bool splay_on_access() const { return options_.splay_on_access; }
  void set_splay_on_access(bool on) { options_.splay_on_access = on; }

 private:
  using UniqueKeyTree::UniqueKeyTree;
};

}  // namespace pulse::ds
