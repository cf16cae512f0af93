// pulse::ds::Map and pulse::ds::MultiMap: far-memory red-black trees of
// uint64 keys to uint64 values, like std::map<uint64_t, uint64_t> and
// std::multimap<uint64_t, uint64_t>.
//
// Both are OrderedTree (ordered_tree.h: node layout, offloaded reads,
// errors): Find(), LowerBound(), UpperBound(), Count() and AggregateRange()
// are pulse iterators that run offloaded or at the CPU node as the client's
// dispatch policy (or set_mode()) decides; updates run at the CPU node and
// rebalance with red-black recolouring and rotations (the colour is the
// node's balancing word).  A MultiMap keeps equal keys in insertion order.
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches a map and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  Destroying a map does not free its
// far memory.
#pragma once

#include <memory>

#include "pulse/ds/ordered_tree.h"

namespace pulse::ds {

class Map : public UniqueKeyTree {
 public:
  // An empty map; nothing is allocated until the first insertion.  `client`
  // must outlive the map.  Errors: InvalidArgument (no client), Internal (an
  // iterator failed to load).
  static Result<std::unique_ptr<Map>> Create(Client* client, const OrderedTreeOptions& options = {});

 private:
  using UniqueKeyTree::UniqueKeyTree;
};

class MultiMap : public MultiKeyTree {
 public:
  // As Map::Create.
  static Result<std::unique_ptr<MultiMap>> Create(Client* client,
                                                  const OrderedTreeOptions& options = {});

 private:
  using MultiKeyTree::MultiKeyTree;
};

}  // namespace pulse::ds
