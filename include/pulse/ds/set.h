// pulse::ds::Set and pulse::ds::MultiSet: far-memory red-black trees of
// uint64 keys, like std::set<uint64_t> and std::multiset<uint64_t>.
//
// Both are OrderedTree (ordered_tree.h: node layout, offloaded reads,
// errors) whose nodes store each key as its own value: LowerBound(),
// UpperBound() and Scan() return (key, key) entries and AggregateRange()
// sums, and takes the min/max of, the keys in [lo, hi].  Contains(),
// LowerBound(), UpperBound(), Count() and AggregateRange() are pulse
// iterators that run offloaded or at the CPU node as the client's dispatch
// policy (or set_mode()) decides; updates run at the CPU node.
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches a set and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  Destroying a set does not free its
// far memory.
#pragma once

#include <cstdint>
#include <memory>

#include "pulse/ds/ordered_tree.h"

namespace pulse::ds {

class Set : public OrderedTree {
 public:
  // An empty set; `client` must outlive it.  Errors: InvalidArgument (no
  // client), Internal (an iterator failed to load).
  static Result<std::unique_ptr<Set>> Create(Client* client, const OrderedTreeOptions& options = {});

  // Inserts key if absent (true); false if it was present (std::set::insert).
  Result<bool> Insert(uint64_t key) { return InsertEntry(key, key, false); }
  // Removes key; true if it was present.  Frees its node.
  Result<bool> Erase(uint64_t key) { return EraseFirst(key); }
  // Whether key is present: one offloaded descent.
  Result<bool> Contains(uint64_t key) { return ContainsKey(key); }

 private:
  using OrderedTree::OrderedTree;
};

class MultiSet : public OrderedTree {
 public:
  // As Set::Create.
  static Result<std::unique_ptr<MultiSet>> Create(Client* client,
                                                  const OrderedTreeOptions& options = {});

  // Inserts one more copy of key.
  Status Insert(uint64_t key) { return InsertDuplicate(key, key); }
  // Removes every copy of key (std::multiset::erase(key)); returns how many.
  Result<uint64_t> Erase(uint64_t key) { return EraseAll(key); }
  // Removes one copy of key (erase(find(key))); true if there was one.
  Result<bool> EraseOne(uint64_t key) { return EraseFirst(key); }
  Result<bool> Contains(uint64_t key) { return ContainsKey(key); }

 private:
  using OrderedTree::OrderedTree;
};

}  // namespace pulse::ds
