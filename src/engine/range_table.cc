#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "pulse/memory.h"

namespace pulse {

Status RangeTable::Add(const Range& range) {
  if (range.length == 0) return Status::InvalidArgument("range: length must be positive");
  if (range.base + range.length < range.base)
    return Status::InvalidArgument(fmt::format("range: [{:#x}, +{}) wraps around the address space",
                                               range.base, range.length));
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), range.base,
                             [](const Range& r, uint64_t b) { return r.base < b; });
  auto overlaps = [&](const Range& other) {
    return range.base < other.base + other.length && other.base < range.base + range.length;
  };
  if (it != ranges_.end() && overlaps(*it))
    return Status::InvalidArgument(fmt::format("range: [{:#x}, +{}) overlaps [{:#x}, +{})", range.base,
                                               range.length, it->base, it->length));
  if (it != ranges_.begin() && overlaps(*std::prev(it)))
    return Status::InvalidArgument(fmt::format("range: [{:#x}, +{}) overlaps [{:#x}, +{})", range.base,
                                               range.length, std::prev(it)->base,
                                               std::prev(it)->length));
  ranges_.insert(it, range);
  return Status::Ok();
}

Status RangeTable::Remove(uint64_t base) {
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), base,
                             [](const Range& r, uint64_t b) { return r.base < b; });
  if (it == ranges_.end() || it->base != base)
    return Status::NotFound(fmt::format("range: no range starts at {:#x}", base));
  ranges_.erase(it);
  return Status::Ok();
}

const Range* RangeTable::Find(uint64_t addr) const {
  // The last range whose base is <= addr is the only candidate.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](uint64_t a, const Range& r) { return a < r.base; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return it->Contains(addr) ? &*it : nullptr;
}

}  // namespace pulse
