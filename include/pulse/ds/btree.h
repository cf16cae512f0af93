// pulse::ds::BTree: a far-memory B+tree of uint64 keys to uint64 values, like
// Google's btree_map<uint64_t, uint64_t>.
//
// Every node is 256 bytes (one traversal window): up to 15 sorted keys;
// inner nodes hold count + 1 children, leaves hold the values and a pointer
// to the next leaf, so leaves form a sorted chain for range scans.  Nodes
// are placed by the client's AllocationPolicy.  LowerBound()/Find() and
// AggregateRange() are pulse iterators compiled from C
// (src/ds/iterators/ds_btree_*.c) with an unrolled in-node search, one
// iteration per level (then per leaf for ranges), offloaded to the memory
// nodes or executed here over one-sided reads as the client's dispatch
// policy (or the tree's execution mode) decides.  Insert(), Erase() and
// Scan() run at the CPU node with Client::Read/Write.  Erase() does not
// merge or free nodes yet: an emptied leaf stays in the chain (traversals
// step over it).
//
// Thread-safety: not thread-safe; writers must hold the library's lock
// (later).  Destroying the tree does not free its far memory.
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

struct BTreeOptions {
  // Where LowerBound(), Find() and AggregateRange() run; unset: the client's
  // dispatch policy decides.
  std::optional<ExecutionMode> mode;
};

class BTree {
 public:
  using Entry = std::pair<uint64_t, uint64_t>;  // key, value

  // Allocates an empty root leaf.  `client` must outlive the tree.
  static Result<std::unique_ptr<BTree>> Create(Client* client, const BTreeOptions& options = {});

  // Inserts key -> value if key is absent (true); leaves the tree unchanged
  // if it is present (false), like std::map::insert.  Splits full nodes.
  Result<bool> Insert(uint64_t key, uint64_t value);
  // Removes key; true if it was present.
  Result<bool> Erase(uint64_t key);
  // The value of key, or nullopt (a LowerBound traversal).
  Result<std::optional<uint64_t>> Find(uint64_t key);
  // The first entry whose key is >= key, or nullopt.
  Result<std::optional<Entry>> LowerBound(uint64_t key);
  // sum/min/max/count of the values whose keys are in [lo, hi].
  Result<Aggregate> AggregateRange(uint64_t lo, uint64_t hi);
  // The entries with keys in [lo, hi], in order, at most `limit`: a descent
  // and a walk of the leaf chain by one-sided reads at the CPU node.
  Result<std::vector<Entry>> Scan(uint64_t lo, uint64_t hi, size_t limit = SIZE_MAX);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint32_t height() const { return height_; }  // 1: the root is a leaf
  // The far address of the root node (changes when the root splits): where
  // an application's own iterator over the tree starts.
  uint64_t root() const { return root_; }
  std::optional<ExecutionMode> mode() const { return mode_; }
  void set_mode(std::optional<ExecutionMode> mode) { mode_ = mode; }

 private:
  struct Split;
  BTree(Client* client, uint64_t root, std::optional<ExecutionMode> mode)
      : client_(client), root_(root), mode_(mode) {}
  Result<std::optional<Split>> InsertAt(uint64_t addr, uint64_t key, uint64_t value, bool* inserted);

  Client* client_;
  uint64_t root_;
  std::optional<ExecutionMode> mode_;
  size_t size_ = 0;
  uint32_t height_ = 1;
};

}  // namespace pulse::ds
