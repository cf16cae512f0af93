#include "switch/router.h"

#include <fmt/format.h>

namespace pulse {

Status Router::AddRange(uint64_t base, uint64_t length, NodeId node) {
  if (length == 0 || base + length < base)
    return Status::InvalidArgument(fmt::format("route: bad range [{:#x}, +{})", base, length));
  auto next = ranges_.lower_bound(base);
  if (next != ranges_.end() && next->first < base + length)
    return Status::InvalidArgument(fmt::format("route: [{:#x}, +{}) overlaps the range at {:#x}", base, length, next->first));
  if (next != ranges_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.length > base)
      return Status::InvalidArgument(fmt::format("route: [{:#x}, +{}) overlaps the range at {:#x}", base, length, prev->first));
  }
  ranges_.emplace(base, Entry{length, node});
  return Status::Ok();
}

std::optional<NodeId> Router::Owner(uint64_t addr) const {
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (addr - it->first >= it->second.length) return std::nullopt;
  return it->second.node;
}

RouteDecision Router::Route(TraversalMessage* m) {
  auto to_cpu = [&] {
    ++counters_.responses;
    return RouteDecision{RouteDecision::To::kCpuNode, m->cpu_node};
  };
  auto invalid = [&] {
    ++counters_.invalid_pointers;
    m->kind = MessageKind::kResponse;
    m->status = TraversalStatus::kFaultInvalidPointer;
    m->fault_addr = m->cur_ptr;
    return to_cpu();
  };
  if (m->kind == MessageKind::kRequest) {
    auto owner = Owner(m->cur_ptr);
    if (!owner) return invalid();
    ++counters_.requests;
    return {RouteDecision::To::kMemoryNode, *owner};
  }
  // A response.  "not local" continues on the owner unless the request asked
  // for pulse-acc behaviour (the CPU node re-issues itself).
  if (m->status == TraversalStatus::kNotLocal && !(m->flags & kFlagPulseAcc)) {
    auto owner = Owner(m->cur_ptr);
    if (!owner) return invalid();
    ++counters_.forwards;
    m->kind = MessageKind::kRequest;
    m->status = TraversalStatus::kDone;
    return {RouteDecision::To::kMemoryNode, *owner};
  }
  if (m->status == TraversalStatus::kNotLocal && !Owner(m->cur_ptr)) return invalid();
  return to_cpu();
}

}  // namespace pulse
