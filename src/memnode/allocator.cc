#include "memnode/allocator.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

namespace pulse::memnode {

PoolAllocator::PoolAllocator(uint64_t pool_bytes, uint64_t granularity)
    : granularity_(std::max<uint64_t>(granularity, 1)),
      capacity_(pool_bytes / granularity_ * granularity_) {
  if (capacity_ > 0) free_.emplace(0, capacity_);
}

uint64_t PoolAllocator::largest_free() const {
  uint64_t best = 0;
  for (const auto& [offset, length] : free_) best = std::max(best, length);
  return best;
}

void PoolAllocator::SetPageBytes(uint64_t page_bytes) {
  page_bytes_ = page_bytes != 0 && page_bytes % granularity_ == 0 ? page_bytes : 0;
}

std::optional<uint64_t> PoolAllocator::PagePlace(uint64_t offset, uint64_t size, uint64_t length) const {
  const uint64_t page = page_bytes_;
  uint64_t start = offset;
  if (length <= page) {
    if (start % page + length > page) start = (start / page + 1) * page;  // would cross: the next page
  } else if (start % page != 0) {
    start = (start / page + 1) * page;  // longer than a page: from a page boundary
  }
  if (start < offset || start - offset > size || size - (start - offset) < length) return std::nullopt;
  return start;
}

void PoolAllocator::Take(std::map<uint64_t, uint64_t>::iterator it, uint64_t offset, uint64_t length) {
  const uint64_t start = it->first, size = it->second;
  free_.erase(it);
  if (offset > start) free_.emplace(start, offset - start);
  if (offset + length < start + size) free_.emplace(offset + length, start + size - offset - length);
  allocated_.emplace(offset, Allocation{offset, length});
  used_ += length;
}

Result<Allocation> PoolAllocator::Allocate(uint64_t bytes) {
  if (bytes == 0) return Status::InvalidArgument("alloc: bytes must be positive");
  const uint64_t units = bytes / granularity_ + (bytes % granularity_ != 0);
  // Guard the multiplication: a request beyond the pool can never fit.
  const uint64_t length = units <= capacity_ / granularity_ ? units * granularity_ : 0;
  if (length != 0 && page_bytes_ != 0) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < length) continue;
      if (std::optional<uint64_t> at = PagePlace(it->first, it->second, length)) {
        Take(it, *at, length);
        return Allocation{*at, length};
      }
    }
  }
  auto it = free_.begin();
  if (length != 0) {
    while (it != free_.end() && it->second < length) ++it;
  } else {
    it = free_.end();
  }
  if (it == free_.end())
    return Status::ResourceExhausted(
        fmt::format("alloc: pool exhausted (asked {}, largest free {})", bytes, largest_free()));
  Allocation a{it->first, length};
  Take(it, a.offset, length);
  return a;
}

Status PoolAllocator::Restore(uint64_t offset, uint64_t length) {
  if (length == 0 || offset % granularity_ != 0 || length % granularity_ != 0 || offset > capacity_ ||
      length > capacity_ - offset)
    return Status::InvalidArgument(fmt::format("restore: bad range [{:#x}, +{})", offset, length));
  auto it = free_.upper_bound(offset);
  if (it == free_.begin())
    return Status::InvalidArgument(fmt::format("restore: [{:#x}, +{}) is not free", offset, length));
  --it;
  const uint64_t start = it->first, size = it->second;
  if (offset + length > start + size)
    return Status::InvalidArgument(fmt::format("restore: [{:#x}, +{}) is not free", offset, length));
  Take(it, offset, length);
  return Status::Ok();
}

Status PoolAllocator::Free(uint64_t offset) {
  auto a = allocated_.find(offset);
  if (a == allocated_.end())
    return Status::NotFound(fmt::format("no allocation starts at pool offset {:#x}", offset));
  uint64_t start = a->second.offset;
  uint64_t length = a->second.length;
  used_ -= length;
  allocated_.erase(a);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && start + length == next->first) {  // merge with the right
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {  // merge with the left
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += length;
      return Status::Ok();
    }
  }
  free_.emplace(start, length);
  return Status::Ok();
}

const Allocation* PoolAllocator::Find(uint64_t offset) const {
  auto a = allocated_.find(offset);
  return a == allocated_.end() ? nullptr : &a->second;
}

std::vector<Allocation> PoolAllocator::Overlapping(uint64_t offset, uint64_t length) const {
  std::vector<Allocation> out;
  // The one that starts before `offset` may reach into the range.
  auto it = allocated_.lower_bound(offset);
  if (it != allocated_.begin()) {
    auto before = std::prev(it);
    if (before->second.offset + before->second.length > offset) out.push_back(before->second);
  }
  for (; it != allocated_.end() && it->first < offset + length; ++it) out.push_back(it->second);
  return out;
}

}  // namespace pulse::memnode
