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
  if (page_owner_) {
    if (std::optional<NodeId> paged = page_owner_(addr)) return paged;
  }
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (addr - it->first >= it->second.length) return std::nullopt;
  return it->second.node;
}

RouteDecision Router::Route(TraversalMessage* m) {
  const bool continuation = m->kind == MessageKind::kResponse;
  bool unroutable = false;
  RouteDecision d = RouteNext([this](uint64_t addr) { return Owner(addr); }, m, &unroutable);
  if (unroutable) ++counters_.invalid_pointers;
  if (d.to == RouteDecision::To::kCpuNode) {
    ++counters_.responses;
  } else if (continuation) {
    ++counters_.forwards;
  } else {
    ++counters_.requests;
  }
  return d;
}

}  // namespace pulse
