#include "client/far_allocator.h"

#include <fmt/format.h>

namespace pulse {

Result<uint64_t> FarAllocator::AllocateOn(uint32_t node, uint64_t bytes) {
  auto& bucket = free_[bytes];
  // Reuse a freed object of the same size on any node: placement is a
  // preference for new memory, not a promise for recycled memory.
  if (policy_ != AllocationPolicy::kPartitioned && !bucket.empty()) {
    const uint64_t addr = bucket.back();
    bucket.pop_back();
    live_[addr] = bytes;
    return addr;
  }
  if (current_.size() < nodes_) current_.resize(nodes_);
  Slab& slab = current_[node];
  if (slab.end - slab.next < bytes) {
    auto got = source_(node, std::max(bytes, slab_bytes_));
    if (!got.ok()) return got.status();
    obtained_[got->first] = got->second;
    if (bytes > slab_bytes_) {  // a large object gets a range of its own
      live_[got->first] = bytes;
      return got->first;
    }
    slab = Slab{got->first, got->first + got->second};
  }
  const uint64_t addr = slab.next;
  slab.next += bytes;
  live_[addr] = bytes;
  return addr;
}

Result<uint64_t> FarAllocator::Allocate(uint64_t bytes, std::optional<uint32_t> node) {
  if (bytes == 0) return Status::InvalidArgument("allocate: bytes must be positive");
  if (nodes_ == 0) return Status::Unavailable("allocate: the cluster has no memory nodes");
  bytes = (bytes + 7) & ~uint64_t{7};
  switch (policy_) {
    case AllocationPolicy::kPartitioned:
      if (!node) return Status::InvalidArgument("allocate: the partitioned policy needs a node");
      if (*node >= nodes_)
        return Status::InvalidArgument(fmt::format("allocate: node {} does not exist ({} memory nodes)", *node, nodes_));
      return AllocateOn(*node, bytes);
    case AllocationPolicy::kUniform: {
      // Objects go to the nodes in turn, each node carving its own slab, so
      // consecutive allocations (a chain, a list) spread over every node.
      const uint32_t node_for_this = next_node_;
      next_node_ = (next_node_ + 1) % nodes_;
      return AllocateOn(node_for_this, bytes);
    }
    case AllocationPolicy::kLocalFirst: {
      Status last = Status::ResourceExhausted("allocate: every memory node is full");
      for (uint32_t n = 0; n < nodes_; ++n) {
        auto r = AllocateOn(n, bytes);
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
  free_[it->second].push_back(addr);
  live_.erase(it);
  return Status::Ok();
}

bool FarAllocator::Owns(uint64_t addr, uint64_t len) const {
  auto it = obtained_.upper_bound(addr);
  if (it == obtained_.begin()) return false;
  --it;
  return addr - it->first < it->second && len <= it->second - (addr - it->first);
}

}  // namespace pulse
