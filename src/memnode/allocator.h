// The memory node's allocator: hands out ranges of the pool at a fixed
// granularity (the allocation granularity of seed 000 2.1: coarse units keep
// the range tables of the memory node and the switch small).  First fit over
// an ordered free list; freeing coalesces with both neighbours.
// Offsets are relative to the start of the pool.  Not thread-safe.
//
// With page bytes set (a racked node once it holds the page directory,
// docs/tier.md), placement keeps pages movable: an allocation of at most a
// page goes where it crosses no page boundary, a longer one starts on a
// page boundary (so it shares no page with another allocation), each the
// lowest such place; only if there is none does it fall back to plain
// first fit.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "pulse/status.h"

namespace pulse::memnode {

struct Allocation {
  uint64_t offset = 0;
  uint64_t length = 0;  // a multiple of the granularity
};

class PoolAllocator {
 public:
  // Manages [0, pool_bytes).  granularity must be positive; a tail shorter
  // than one unit is never handed out.
  PoolAllocator(uint64_t pool_bytes, uint64_t granularity);

  // Allocates at least `bytes` (rounded up to the granularity).  Errors:
  // kInvalidArgument "alloc: bytes must be positive";
  // kResourceExhausted "alloc: pool exhausted (asked L, largest free F)".
  Result<Allocation> Allocate(uint64_t bytes);
  // Marks [offset, offset + length) allocated again (a restarted node
  // restoring its allocations).  Errors: kInvalidArgument unless the range is
  // granularity-aligned, non-empty and entirely free.
  Status Restore(uint64_t offset, uint64_t length);
  // Frees the allocation that starts at `offset`.  kNotFound if none does.
  Status Free(uint64_t offset);
  // The allocation starting at `offset`, if any.
  const Allocation* Find(uint64_t offset) const;
  // Every allocation with a byte in [offset, offset + length), by offset
  // (a page frame's, when a page is to move: docs/tier.md).
  std::vector<Allocation> Overlapping(uint64_t offset, uint64_t length) const;

  // Pages of `page_bytes` from now on (0: none).  Ignored unless it is a
  // multiple of the granularity.  Placements made before stay where they are.
  void SetPageBytes(uint64_t page_bytes);
  uint64_t page_bytes() const { return page_bytes_; }

  uint64_t granularity() const { return granularity_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  uint64_t free_bytes() const { return capacity_ - used_; }
  uint64_t largest_free() const;
  size_t allocations() const { return allocated_.size(); }
  size_t free_blocks() const { return free_.size(); }

 private:
  // Where in the free block [offset, offset + size) an allocation of
  // `length` goes under the page rule, or nullopt if nowhere in it.
  std::optional<uint64_t> PagePlace(uint64_t offset, uint64_t size, uint64_t length) const;
  // Allocates [offset, offset + length) out of the free block at `it`.
  void Take(std::map<uint64_t, uint64_t>::iterator it, uint64_t offset, uint64_t length);

  uint64_t granularity_;
  uint64_t page_bytes_ = 0;
  uint64_t capacity_;  // pool bytes rounded down to the granularity
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> free_;        // offset -> length, disjoint, coalesced
  std::map<uint64_t, Allocation> allocated_;  // by offset
};

}  // namespace pulse::memnode
