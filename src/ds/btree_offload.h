// BTree inserts with the split of a full leaf done near memory: one
// offloaded traversal (src/ds/iterators/ds_btree_insert.c) enters the key in
// its leaf in place, or splits the full leaf into a spare node the caller
// took from a SpareNodes pool and links it in the leaf's parent, so the CPU
// node needs neither a descent by one-sided reads nor the redo log of
// BTree::Insert.  What the traversal declines (a full root leaf, a full
// parent, no spare on the leaf's memory node) is done by BTree::Insert.
//
// The rules for running it (the caller's to keep):
//  - the writer holds the tree exclusively and nothing else traverses the
//    tree while it runs (not even a lookup: a descent that read the parent
//    before the split and reaches the leaf after it would miss a moved
//    key), so one at a time, or several together only for distinct leaves
//    each known to be its key's leaf (learnt since the tree last changed
//    shape) and started there: two splits then never meet at a leaf, and
//    at a shared parent each links its node in its own iteration (the
//    memory node runs STORE-bearing iterations one at a time);
//  - the tree handle's root and height stay right (a split here changes
//    neither), but its size() does not count these inserts, nor does the far
//    header: BTree::Repair() recounts it (the `pulse kv serve` index keeps
//    its own key count);
//  - trees with BTreeOptions::partition are not for it (a spare goes to the
//    leaf's memory node, not the partition's).
// If the traversal fails part-way (a memory node died): before the parent
// links the spare nothing reachable has changed (the spare is leaked); after
// it, but before the leaf shrinks, every key is still found by Find,
// LowerBound, Scan and AggregateRange, but the leaf keeps copies of the keys
// that moved (Validate reports them; an Erase of a moved key would leave its
// copy visible to Scan).  The key of the failed call is there or not.
//
// Not thread-safe (one per Client user, like BTree).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "ds/iterators/ds_nodes.h"
#include "pulse/client.h"
#include "pulse/ds/btree.h"
#include "pulse/status.h"

namespace pulse::ds::internal {

// Fresh 256-byte nodes by memory node, allocated one Client::Allocate each
// (so BTree::Erase can free them like its own) and kept until used.  Spares
// not used when the pool is destroyed are freed.
class SpareNodes {
 public:
  explicit SpareNodes(Client* client) : client_(client) {}
  ~SpareNodes();
  SpareNodes(const SpareNodes&) = delete;
  SpareNodes& operator=(const SpareNodes&) = delete;
  // A spare on memory node `node`, allocating up to memory_nodes() + 1 nodes
  // (kept for later) to find one there; 0 if the allocation policy put none
  // there.  Errors: those of Allocate.
  Result<uint64_t> Take(uint32_t node);
  // A spare Take() handed out and the traversal left unwritten.
  void Give(uint64_t addr);

 private:
  Client* client_;
  std::map<uint32_t, std::vector<uint64_t>> by_node_;
};

// The traversal's program (embedded in the library).
Result<ProgramRef> BTreeInsertProgram();

// The scratch pad of an insert of key -> value with `spare` (0: none), and
// the final state of a finished traversal (Internal if the scratch pad came
// back short; the traversal's own fault as its error).  The traversal starts
// at the tree's root (parent 0), at any inner node on the key's path, or,
// with `parent` the leaf's parent, at the key's leaf itself (one iteration
// less; only if the caller knows the tree has not changed shape since it
// learnt the leaf and parent, e.g. from a traversal's `leaf` and `parent`).
std::vector<uint8_t> BTreeInsertScratch(const ProgramRef& program, uint64_t key, uint64_t value, uint64_t spare,
                                        uint64_t parent = 0);
Result<pulse_ds_btree_insert_state> BTreeInsertState(const TraversalResult& result);

// Counts of how InsertNearMemory's inserts went.
struct OffloadInsertStats {
  uint64_t in_place = 0;   // entered in their leaf by the traversal
  uint64_t splits = 0;     // a leaf split by the traversal
  uint64_t at_cpu = 0;     // declined: BTree::Insert
};

// Inserts key -> value into `tree` (of `client`; its handle current: Open()ed or
// Refresh()ed under the writer's lock) as BTree::Insert does (true: it was
// absent), by the traversal above and BTree::Insert for what it declines.
// `leaf` is the key's leaf if the caller knows it (the spare is taken on its
// memory node); 0: a first traversal without a spare finds it.  Errors:
// those of the traversal, Allocate and BTree::Insert.
Result<bool> InsertNearMemory(Client* client, BTree& tree, SpareNodes& spares, uint64_t key, uint64_t value,
                              uint64_t leaf, OffloadInsertStats* stats = nullptr);

}  // namespace pulse::ds::internal
