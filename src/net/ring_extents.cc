// First-fit extents of a double-layer ring's data area (ring_extents.h).
#include "net/ring_extents.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace pulse::net::ring {

ExtentAllocator::ExtentAllocator(size_t bytes, size_t unit)
    : unit_(unit == 0 ? 1 : unit), capacity_(bytes / unit_ * unit_), free_bytes_(capacity_) {
  if (capacity_ > 0) free_.emplace(0, capacity_);
}

size_t ExtentAllocator::Round(size_t bytes) const {
  return std::max<size_t>(1, (bytes + unit_ - 1) / unit_) * unit_;
}

std::optional<size_t> ExtentAllocator::Allocate(size_t bytes) {
  const size_t want = Round(bytes);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < want) continue;
    const size_t offset = it->first;
    const size_t left = it->second - want;
    free_.erase(it);
    if (left > 0) free_.emplace(offset + want, left);
    free_bytes_ -= want;
    return offset;
  }
  return std::nullopt;
}

void ExtentAllocator::Free(size_t offset, size_t bytes) {
  const size_t length = Round(bytes);
  auto next = free_.lower_bound(offset);
  const bool overlaps_next = next != free_.end() && offset + length > next->first;
  const bool overlaps_prev = next != free_.begin() && std::prev(next)->first + std::prev(next)->second > offset;
  if (offset % unit_ != 0 || offset + length > capacity_ || overlaps_next || overlaps_prev) {
    std::fprintf(stderr, "ExtentAllocator::Free(%zu, %zu): not an allocated extent\n", offset, bytes);
    std::abort();
  }
  size_t start = offset;
  size_t end = offset + length;
  if (next != free_.end() && next->first == end) {
    end += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      free_.erase(prev);
    }
  }
  free_.emplace(start, end - start);
  free_bytes_ += length;
}

size_t ExtentAllocator::largest_free() const {
  size_t best = 0;
  for (const auto& [offset, length] : free_) best = std::max(best, length);
  return best;
}

}  // namespace pulse::net::ring
