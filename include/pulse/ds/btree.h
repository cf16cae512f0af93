// pulse::ds::BTree: a far-memory B+tree of uint64 keys to uint64 values, like
// Google's btree_map<uint64_t, uint64_t>.
//
// Every node is 256 bytes (one traversal window): up to 15 sorted keys;
// inner nodes hold count + 1 children, leaves hold the values and a pointer
// to the next leaf, so leaves form a sorted chain for range scans.  Every
// node but the root holds at least 7 keys: Erase() borrows from or merges
// with a sibling and frees emptied nodes, and shrinks the tree when the root
// has a single child.  A 40-byte far header {root, height, size, log} describes
// the tree, so other CPU nodes can Open() it by its address and Refresh()
// after a writer changed it (under pulse::ds::FarLock, include/pulse/ds/lock.h).
//
// LowerBound()/UpperBound()/Find() and AggregateRange() are pulse iterators
// compiled from C (src/ds/iterators/ds_btree_*.c) with an unrolled in-node
// search, one iteration per level (then per leaf for ranges), offloaded to
// the memory nodes or executed here over one-sided reads as the client's
// dispatch policy (or the tree's execution mode) decides.  Insert(), Erase()
// and Scan() run at the CPU node with Client::Read/Write.
//
// Placement: by the client's AllocationPolicy, or, with
// BTreeOptions::partition (the client must use AllocationPolicy::kPartitioned),
// keys below the split key in nodes on one memory node and the others on
// another (seed 000 C.2, Fig. 5): a lookup then crosses memory nodes at most
// once on its way down, where a uniformly placed tree crosses at almost
// every level.
//
// Failed writes (a memory node died, a retry budget ran out).  An update
// that changes one node (most inserts and erases) writes that node, then the
// header.  One that changes several (splits, borrows, merges, a new or
// collapsed root) first writes every new node image and the new header into
// a redo log next to the header (src/ds/far_redo_log.h) and commits it with
// one small write, then writes the images in an order that keeps every
// read correct at every step: a new node before the parent that links it,
// a node that gains keys before its parent's new separator, the parent
// before the node that loses keys (so a key moved right is found in the new
// right node, or still in the old left one, never in neither), then clears
// the log, then frees the emptied nodes.  If a write fails part-way the
// failed call returns its error and the tree stays readable (Find,
// LowerBound and AggregateRange see every acknowledged key; during a
// borrow the leaf chain may show a moved key twice, which Scan and
// AggregateRange count once); the key of the failed call itself is either
// there or not.  The handle then
// repairs before its next operation (or in Repair()): it replays a
// committed log, re-reads the header and recounts the entries.  Open()
// replays a committed log left by a writer that failed; Refresh() does not
// write.  Nodes allocated or to be freed by an update that failed are
// leaked (never reused while reachable).
//
// Thread-safety: not thread-safe.  Several CPU nodes (each with its own
// Client and BTree handle) may share one tree if writers hold a FarLock
// exclusively and readers hold it shared and Refresh() after acquiring it.
// Destroying the handle does not free the tree's far memory.
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
struct TestingHooks;
}  // namespace internal

// Keys < split_key live in nodes on memory node `low_node`, the others on
// `high_node` (nodes whose keys straddle the split, the upper levels, are on
// low_node).
struct BTreePartition {
  uint64_t split_key = uint64_t{1} << 63;
  uint32_t low_node = 0;
  uint32_t high_node = 1;
};

struct BTreeOptions {
  // Where LowerBound(), Find() and AggregateRange() run; unset: the client's
  // dispatch policy decides.
  std::optional<ExecutionMode> mode;
  // Partitioned placement (nodes named to Client::Allocate, whatever the
  // client's AllocationPolicy).
  std::optional<BTreePartition> partition;
};

class BTree {
 public:
  using Entry = std::pair<uint64_t, uint64_t>;  // key, value

  // Allocates the header and an empty root leaf.  `client` must outlive the
  // tree.  Errors: InvalidArgument (no client, a partition node that does
  // not exist), those of Allocate/Write.
  static Result<std::unique_ptr<BTree>> Create(Client* client, const BTreeOptions& options = {});
  // A handle on the tree whose header is at `header` (header_address() of
  // the creator), e.g. from another CPU node.  Errors: InvalidArgument if the
  // header is not a tree's; those of Read.
  static Result<std::unique_ptr<BTree>> Open(Client* client, uint64_t header,
                                             const BTreeOptions& options = {});

  // Inserts key -> value if key is absent (true); leaves the tree unchanged
  // if it is present (false), like std::map::insert.  Splits full nodes.
  Result<bool> Insert(uint64_t key, uint64_t value);
  // Removes key; true if it was present.  Rebalances and frees emptied nodes.
  Result<bool> Erase(uint64_t key);
  // The value of key, or nullopt (a LowerBound traversal).
  Result<std::optional<uint64_t>> Find(uint64_t key);
  // The first entry whose key is >= key, or nullopt.
  Result<std::optional<Entry>> LowerBound(uint64_t key);
  // The first entry whose key is > key, or nullopt (the LowerBound
  // iterator from key + 1: the same offloaded traversal).
  Result<std::optional<Entry>> UpperBound(uint64_t key);
  // sum/min/max/count of the values whose keys are in [lo, hi].
  Result<Aggregate> AggregateRange(uint64_t lo, uint64_t hi);
  // The entries with keys in [lo, hi], in order, at most `limit`: a descent
  // and a walk of the leaf chain by one-sided reads at the CPU node.
  Result<std::vector<Entry>> Scan(uint64_t lo, uint64_t hi, size_t limit = SIZE_MAX);

  // Re-reads the far header (root, height, size) another CPU node may have
  // changed.  Writes nothing (a redo log left by a failed writer is replayed
  // by Open() or a writer's Repair()).  Errors: those of Read.
  Status Refresh();
  // Completes an update that failed part-way: replays the redo log if it was
  // committed, re-reads the header, recounts the entries (one read per leaf)
  // and rewrites the header's size if it was wrong.  Every operation of this
  // handle does this first after one of its writes failed.  Errors: those of
  // Read and Write (the tree is then still readable; call again later).
  Status Repair();
  // True while an earlier update of this handle may be half-done.
  bool repair_needed() const { return repair_needed_; }
  // Walks the whole tree and checks the B+tree invariants: sorted keys
  // within separator bounds, every leaf at the same depth, at least 7 keys
  // in every node but the root, a leaf chain visiting every entry in order,
  // the size in the header.  Internal naming the node that breaks one.
  Status Validate();
  // Reads the top `levels` levels of the tree with Client::Read, which
  // (with ClientOptions::cache enabled) keeps them cached at this CPU node:
  // traversals then start locally and are offloaded from the first
  // uncached node.  Returns the bytes read.
  Result<uint64_t> WarmCache(uint32_t levels);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint32_t height() const { return height_; }  // 1: the root is a leaf
  // The far address of the root node (changes when the root splits): where
  // an application's own iterator over the tree starts.
  uint64_t root() const { return root_; }
  uint64_t header_address() const { return header_; }
  std::optional<ExecutionMode> mode() const { return mode_; }
  void set_mode(std::optional<ExecutionMode> mode) { mode_ = mode; }

 private:
  friend struct internal::TestingHooks;  // src/ds/testing_hooks.h
  struct Header;
  struct Plan;
  BTree(Client* client, uint64_t header, const BTreeOptions& options)
      : client_(client), header_(header), mode_(options.mode), partition_(options.partition) {}
  // Writes a planned update (directly, or through the redo log) and adopts
  // its header; on failure marks the handle for repair.
  Status Apply(Plan& plan);
  // Every far write of the tree (the test hook counts them here).
  Status Put(uint64_t addr, const void* src, size_t length);
  Status RepairIfNeeded() { return repair_needed_ ? Repair() : Status::Ok(); }
  // The number of entries, by walking the leaf chain.
  Result<uint64_t> CountEntries();
  Status WriteHeader();
  // The memory node for a new node whose smallest key is min_key (nullopt:
  // the client's policy decides).
  std::optional<uint32_t> PlaceFor(uint64_t min_key) const;
  Result<uint64_t> AllocateNode(uint64_t min_key);

  Client* client_;
  uint64_t header_;
  uint64_t log_ = 0;  // the redo log (FarRedoLog::kBytes), next to the header
  uint64_t root_ = 0;
  std::optional<ExecutionMode> mode_;
  std::optional<BTreePartition> partition_;
  size_t size_ = 0;
  uint32_t height_ = 1;
  bool repair_needed_ = false;
  int64_t fail_write_in_ = -1;  // the write that fails (tests only; -1: none)
};

}  // namespace pulse::ds
