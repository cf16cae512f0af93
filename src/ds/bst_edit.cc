#include "ds/bst_edit.h"

#include <fmt/format.h>

#include "ds/ds_common.h"

namespace pulse::ds::internal {

BstEdit::Slot* BstEdit::Load(uint64_t addr) {
  if (!status_.ok()) return nullptr;
  if (addr == 0) {
    status_ = Status::Internal("ordered tree: a null node was dereferenced (corrupt tree)");
    return nullptr;
  }
  auto [it, inserted] = nodes_.try_emplace(addr);
  if (inserted) {
    Status s = ReadObject(client_, addr, it->second.node);
    if (!s.ok()) {
      nodes_.erase(it);
      status_ = s;
      return nullptr;
    }
  }
  return &it->second;
}

const BstNode& BstEdit::Get(uint64_t addr) {
  Slot* slot = Load(addr);
  if (slot == nullptr) {
    dummy_ = BstNode{};
    return dummy_;
  }
  return slot->node;
}

BstNode& BstEdit::Mut(uint64_t addr) {
  Slot* slot = Load(addr);
  if (slot == nullptr) {
    dummy_ = BstNode{};
    return dummy_;
  }
  slot->dirty = true;
  return slot->node;
}

uint64_t BstEdit::NewNode(uint64_t key, uint64_t value) {
  if (!status_.ok()) return 0;
  auto addr = client_->Allocate(sizeof(BstNode));
  if (!addr.ok()) {
    status_ = addr.status();
    return 0;
  }
  Slot& slot = nodes_[*addr];
  slot.node = BstNode{};
  slot.node.key = key;
  slot.node.value = value;
  slot.dirty = true;
  return *addr;
}

void BstEdit::FreeNode(uint64_t addr) {
  nodes_.erase(addr);
  freed_.push_back(addr);
}

uint64_t BstEdit::Child(uint64_t node, bool left) {
  if (node == 0) return 0;
  const BstNode& n = Get(node);
  return left ? n.left : n.right;
}

void BstEdit::Link(uint64_t parent, bool left, uint64_t child) {
  if (parent == 0) {
    root_ = child;
  } else if (left) {
    Mut(parent).left = child;
  } else {
    Mut(parent).right = child;
  }
  if (child != 0 && Get(child).parent != parent) Mut(child).parent = parent;
}

void BstEdit::Replace(uint64_t parent, uint64_t old, uint64_t replacement) {
  Link(parent, parent != 0 && Get(parent).left == old, replacement);
}

void BstEdit::RotateUp(uint64_t node) {
  const uint64_t parent = Get(node).parent;
  if (parent == 0) {
    status_ = Status::Internal("ordered tree: rotating the root up");
    return;
  }
  const uint64_t grand = Get(parent).parent;
  const bool left = Get(parent).left == node;
  // node's inner subtree moves to parent; parent becomes node's child.
  Link(parent, left, Child(node, !left));
  Replace(grand, parent, node);
  Link(node, !left, parent);
}

uint64_t BstEdit::Leftmost(uint64_t node) {
  while (ok() && Get(node).left != 0) node = Get(node).left;
  return node;
}

std::vector<uint64_t> BstEdit::InOrder(uint64_t node) {
  std::vector<uint64_t> out, stack;
  while (ok() && (node != 0 || !stack.empty())) {
    if (node != 0) {
      stack.push_back(node);
      node = Get(node).left;
    } else {
      node = stack.back();
      stack.pop_back();
      out.push_back(node);
      node = Get(node).right;
    }
  }
  return out;
}

Status BstEdit::Commit() {
  if (!status_.ok()) return status_;
  for (const auto& [addr, slot] : nodes_) {
    if (slot.dirty) PULSE_RETURN_IF_ERROR(WriteObject(client_, addr, slot.node));
  }
  for (uint64_t addr : freed_) {
    Status s = client_->Free(addr);
    if (!s.ok()) {
      return Status::Internal(fmt::format("ordered tree: freeing node {:#x}: {}", addr,
                                          s.ToString()));
    }
  }
  nodes_.clear();
  freed_.clear();
  return Status::Ok();
}

}  // namespace pulse::ds::internal
