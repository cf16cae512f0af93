#include "client/far_allocator.h"

#include <fmt/format.h>

namespace pulse {

Result<uint64_t> FarAllocator::AllocateOn(uint32_t node, uint64_t bytes, bool pinned) {
  // A freed object of this size: of the node asked for, or of any node when
  // the policy places objects (placement is then a preference for new
  // memory, not a promise for recycled memory).
  const uint32_t nodes_to_look_at = pinned ? 1 : nodes_;
  for (uint32_t n = 0; n < nodes_to_look_at; ++n) {
    const uint32_t from = (node + n) % nodes_;
    auto bucket = free_.find({bytes, from});
    if (bucket == free_.end() || bucket->second.empty()) continue;
    // A pinned allocation takes a freed object only where it is now; one
    // whose page moved away waits for an unpinned one.
    std::vector<uint64_t>& objects = bucket->second;
    for (size_t i = objects.size(); i-- > 0;) {
      if (pinned && !StillOn(objects[i], node)) continue;
      const uint64_t addr = objects[i];
      objects[i] = objects.back();
      objects.pop_back();
      live_[addr] = Object{bytes, from};
      return addr;
    }
  }
  if (current_.size() < nodes_) current_.resize(nodes_);
  Slab& slab = current_[node];
  // The rest of a slab whose page moved to another node is left unused.
  if (slab.end - slab.next < bytes || !StillOn(slab.next, node)) {
    auto got = source_(node, std::max(bytes, slab_bytes_));
    if (!got.ok()) return got.status();
    obtained_[got->first] = got->second;
    if (bytes > slab_bytes_) {  // a large object gets a range of its own
      live_[got->first] = Object{bytes, node};
      return got->first;
    }
    slab = Slab{got->first, got->first + got->second};
  }
  const uint64_t addr = slab.next;
  slab.next += bytes;
  live_[addr] = Object{bytes, node};
  return addr;
}

Result<uint64_t> FarAllocator::Allocate(uint64_t bytes, std::optional<uint32_t> node) {
  if (bytes == 0) return Status::InvalidArgument("allocate: bytes must be positive");
  if (nodes_ == 0) return Status::Unavailable("allocate: the cluster has no memory nodes");
  bytes = (bytes + 7) & ~uint64_t{7};
  if (node) {
    if (*node >= nodes_)
      return Status::InvalidArgument(fmt::format("allocate: node {} does not exist ({} memory nodes)", *node, nodes_));
    return AllocateOn(*node, bytes, true);
  }
  switch (policy_) {
    case AllocationPolicy::kPartitioned:
      return Status::InvalidArgument("allocate: the partitioned policy needs a node");
    case AllocationPolicy::kUniform: {
      // Objects go to the nodes in turn, each node carving its own slab, so
      // consecutive allocations (a chain, a list) spread over every node.
      const uint32_t node_for_this = next_node_;
      next_node_ = (next_node_ + 1) % nodes_;
      return AllocateOn(node_for_this, bytes, false);
    }
    case AllocationPolicy::kLocalFirst: {
      Status last = Status::ResourceExhausted("allocate: every memory node is full");
      for (uint32_t n = 0; n < nodes_; ++n) {
        auto r = AllocateOn(n, bytes, false);
        if (r.ok()) return r;
        last = r.status();
        if (last.code() != Status::Code::kInvalidArgument && last.code() != Status::Code::kResourceExhausted)
          return last;  // a transport error: do not paper over it
      }
      return last;
    }
  }
  return Status::Internal("allocate: unknown policy");
}

Status FarAllocator::Free(uint64_t addr) {
  auto it = live_.find(addr);
  if (it == live_.end()) return Status::InvalidArgument(fmt::format("free: {:#x} is not a live allocation", addr));
  free_[{it->second.bytes, it->second.node}].push_back(addr);
  live_.erase(it);
  return Status::Ok();
}

bool FarAllocator::StillOn(uint64_t addr, uint32_t node) const {
  if (!where_) return true;
  const std::optional<uint32_t> now = where_(addr);
  return !now || *now == node;
}

bool FarAllocator::Owns(uint64_t addr, uint64_t len) const {
  auto it = obtained_.upper_bound(addr);
  if (it == obtained_.begin()) return false;
  --it;
  return addr - it->first < it->second && len <= it->second - (addr - it->first);
}

}  // namespace pulse
