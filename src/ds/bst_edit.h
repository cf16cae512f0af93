// One update of an ordered tree at the CPU node: the nodes it touches, read
// from far memory once, changed here, written back once by Commit().  The
// balancing policies (bst_balancer.h) are written against it.
//
// Errors are sticky: a failed read or allocation records the Status, later
// reads return a zeroed node (so loops along parent links end), and Commit()
// returns that Status without writing anything.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ds/iterators/ds_nodes.h"
#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::ds::internal {

using BstNode = pulse_ds_bst_node;

class BstEdit {
 public:
  BstEdit(Client* client, uint64_t root) : client_(client), root_(root) {}

  // The node at `addr` (read on first use).  References stay valid for the
  // life of the edit.  Mut() marks the node to be written back.
  const BstNode& Get(uint64_t addr);
  BstNode& Mut(uint64_t addr);

  uint64_t root() const { return root_; }
  bool ok() const { return status_.ok(); }

  // A new detached node (meta 0); 0 after an allocation error.
  uint64_t NewNode(uint64_t key, uint64_t value);
  // Frees the node's far memory at Commit().
  void FreeNode(uint64_t addr);

  // The child of `node` on the left (or right) side; 0 for node 0.
  uint64_t Child(uint64_t node, bool left);
  // Makes `child` (may be 0) the left/right child of `parent` (0: the root).
  void Link(uint64_t parent, bool left, uint64_t child);
  // Puts `replacement` (may be 0) where `old` hangs under `parent` (0: the
  // root) and sets its parent link.
  void Replace(uint64_t parent, uint64_t old, uint64_t replacement);
  // Rotates `node` above its parent (a right rotation if it is a left child).
  void RotateUp(uint64_t node);
  // The leftmost node of the subtree at `node`.
  uint64_t Leftmost(uint64_t node);
  // The nodes of the subtree at `node`, in order.
  std::vector<uint64_t> InOrder(uint64_t node);

  // Writes every changed node, then frees the freed ones.  Returns the first
  // error of the edit or of the writes.
  Status Commit();

 private:
  struct Slot {
    BstNode node;
    bool dirty = false;
  };
  Slot* Load(uint64_t addr);

  Client* client_;
  uint64_t root_;
  Status status_;
  std::unordered_map<uint64_t, Slot> nodes_;
  std::vector<uint64_t> freed_;
  BstNode dummy_{};  // what reads return after an error
};

}  // namespace pulse::ds::internal
