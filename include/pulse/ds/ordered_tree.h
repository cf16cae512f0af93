// pulse::ds::OrderedTree: the far-memory binary search tree under the
// library's ordered structures (Map, MultiMap in map.h; Set, MultiSet in
// set.h; AvlTree, SplayTree, ScapegoatTree), uint64 keys to uint64 values.
//
// Every node is one pulse_ds_bst_node {key, value, left, right, parent,
// balancing word} of 48 bytes (src/ds/iterators/ds_nodes.h), the same for all
// balancing schemes, placed by the client's AllocationPolicy.  The read
// traversals are pulse iterators compiled from C, shared by all seven
// structures: ds_bst_search (a descent for find, lower_bound and upper_bound)
// and ds_bst_aggregate (an in-order walk over [lo, hi] along the parent
// links); they run offloaded on the memory nodes or here over one-sided reads
// as the client's dispatch policy (or the tree's execution mode) decides.
// Updates locate their place with the same descent, then link, unlink and
// rebalance at the CPU node with Client::Read/Write (the nodes an update
// touches are read once and written back once at its end).  Scan() walks
// the successors at the CPU node.  Only the root's address and the size
// (and a scapegoat tree's max size) are kept at the CPU node.
//
// Use the derived classes; this one carries the reads they share.  Sets
// store each key as its own value, so entries of a set are (key, key) and
// AggregateRange() sums keys.
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches a tree and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  A SplayTree's lookups are writers too
// when they splay (see splay_tree.h).  Destroying a tree does not free its
// far memory.
//
// Errors: every call returns the Client's error (InvalidArgument,
// Unavailable, Timeout, ResourceExhausted) when far memory cannot be read,
// written or allocated, and Internal when a traversal does not finish; a
// failed update writes nothing (its far nodes are written only at its end),
// but nodes it allocated stay allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "pulse/client.h"
#include "pulse/ds/aggregate.h"
#include "pulse/status.h"

namespace pulse::ds {

namespace internal {
class BstBalancer;
}

// How a tree keeps its height logarithmic.
enum class TreeBalance {
  kRedBlack,   // Map, MultiMap, Set, MultiSet (like the STL's)
  kAvl,        // AvlTree: subtree heights differ by at most one
  kSplay,      // SplayTree: accessed nodes move to the root (amortised)
  kScapegoat,  // ScapegoatTree: rebuilds too-deep subtrees; no per-node data
};

struct OrderedTreeOptions {
  // Where the read traversals run; unset: the client's dispatch policy.
  std::optional<ExecutionMode> mode;
  // SplayTree only: whether lookups splay the node they land on (see
  // splay_tree.h).  Ignored by the other trees.
  bool splay_on_access = true;
  // ScapegoatTree only: the balance factor alpha, 0.5 < alpha < 1; after
  // every insertion no node is deeper than log_{1/alpha}(max size).
  double scapegoat_alpha = 0.7;
};

class OrderedTree {
 public:
  using Entry = std::pair<uint64_t, uint64_t>;  // key, value

  OrderedTree(const OrderedTree&) = delete;
  OrderedTree& operator=(const OrderedTree&) = delete;
  virtual ~OrderedTree();

  // The first entry whose key is >= key (std::map::lower_bound), or nullopt.
  Result<std::optional<Entry>> LowerBound(uint64_t key);
  // The first entry whose key is > key (std::map::upper_bound), or nullopt.
  Result<std::optional<Entry>> UpperBound(uint64_t key);
  // sum/min/max/count of the values whose keys are in [lo, hi] (empty if
  // lo > hi): one offloaded in-order walk.
  Result<Aggregate> AggregateRange(uint64_t lo, uint64_t hi);
  // The number of entries with this key (an AggregateRange over [key, key]).
  Result<uint64_t> Count(uint64_t key);
  // The entries with keys in [lo, hi], in order (duplicates in insertion
  // order), at most `limit`: a LowerBound descent, then successor steps by
  // one-sided reads at the CPU node.  Never splays.
  Result<std::vector<Entry>> Scan(uint64_t lo, uint64_t hi, size_t limit = SIZE_MAX);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  TreeBalance balance() const { return balance_; }
  // The far address of the root node (0 when empty), for tools and tests
  // that read the nodes (layout pulse_ds_bst_node).
  uint64_t root() const { return root_; }
  void set_mode(std::optional<ExecutionMode> mode) { options_.mode = mode; }
  std::optional<ExecutionMode> mode() const { return options_.mode; }

 protected:
  // Checks the client and options and loads the iterators.
  static Status Validate(Client* client, TreeBalance balance, const OrderedTreeOptions& options);
  OrderedTree(Client* client, TreeBalance balance, const OrderedTreeOptions& options, bool multi);

  // Unique trees: inserts key -> value if key is absent (true); otherwise
  // leaves it (false), or overwrites its value if `assign`.  Multi trees:
  // always inserts, after the entries with an equal key (true).
  Result<bool> InsertEntry(uint64_t key, uint64_t value, bool assign);
  Status InsertDuplicate(uint64_t key, uint64_t value);  // multi trees
  // Removes the first entry with this key; true if there was one.
  Result<bool> EraseFirst(uint64_t key);
  // Removes every entry with this key; returns how many there were.
  Result<uint64_t> EraseAll(uint64_t key);
  // The first entry with this key (its value), or nullopt.
  Result<std::optional<Entry>> FindEntry(uint64_t key);
  Result<std::optional<uint64_t>> FindValue(uint64_t key);
  Result<bool> ContainsKey(uint64_t key);

  const internal::BstBalancer& balancer() const { return *balancer_; }
  OrderedTreeOptions options_;

 private:
  struct Hit;
  Result<Hit> Search(uint64_t key, uint64_t kind);
  // Reads that land on `node` let a splay tree splay it (if allowed).
  Status Accessed(uint64_t node);
  Status RemoveNode(uint64_t node);
  // Removes the first entry with this key, or every one if `all`.
  Result<uint64_t> EraseKey(uint64_t key, bool all);

  Client* client_;
  TreeBalance balance_;
  bool multi_;
  std::unique_ptr<internal::BstBalancer> balancer_;
  uint64_t root_ = 0;
  size_t size_ = 0;
};

// A tree of unique keys to values, like std::map<uint64_t, uint64_t>: the
// interface of Map, AvlTree, SplayTree and ScapegoatTree.
class UniqueKeyTree : public OrderedTree {
 public:
  // Inserts key -> value if key is absent (true); leaves the tree unchanged
  // if it is present (false), like std::map::insert.
  Result<bool> Insert(uint64_t key, uint64_t value) { return InsertEntry(key, value, false); }
  // Inserts or overwrites; true if the key was inserted.
  Result<bool> InsertOrAssign(uint64_t key, uint64_t value) { return InsertEntry(key, value, true); }
  // Removes key; true if it was present.  Frees its node.
  Result<bool> Erase(uint64_t key) { return EraseFirst(key); }
  // The value of key, or nullopt: one offloaded descent.
  Result<std::optional<uint64_t>> Find(uint64_t key) { return FindValue(key); }
  Result<bool> Contains(uint64_t key) { return ContainsKey(key); }

 protected:
  using OrderedTree::OrderedTree;
};

// A tree of keys with duplicates to values, like
// std::multimap<uint64_t, uint64_t>: the interface of MultiMap.
class MultiKeyTree : public OrderedTree {
 public:
  // Inserts key -> value after the entries with an equal key.
  Status Insert(uint64_t key, uint64_t value) { return InsertDuplicate(key, value); }
  // Removes every entry with this key (std::multimap::erase(key)); returns
  // how many there were.
  Result<uint64_t> Erase(uint64_t key) { return EraseAll(key); }
  // Removes the first entry with this key (erase(find(key))); true if any.
  Result<bool> EraseOne(uint64_t key) { return EraseFirst(key); }
  // The value of the first entry with this key, or nullopt.
  Result<std::optional<uint64_t>> Find(uint64_t key) { return FindValue(key); }
  Result<bool> Contains(uint64_t key) { return ContainsKey(key); }
  // The entries with this key, in insertion order (std::multimap::equal_range).
  Result<std::vector<Entry>> EqualRange(uint64_t key) { return Scan(key, key); }

 protected:
  using OrderedTree::OrderedTree;
};

}  // namespace pulse::ds
