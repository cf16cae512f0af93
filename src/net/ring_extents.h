// ExtentAllocator: hands out byte ranges of a double-layer ring's data
// area (ring_format.h) and takes them back in any order.
//
// Seed 004's data buffer is a plain ring buffer, freed in order; here an
// entry's space is freed when its answer is taken, and answers come in any
// order, so a ring buffer would let one slow entry hold back the space of
// every entry after it (the head-of-line blocking the double layer exists
// to remove).  First fit over the free extents, neighbours merged on free.
//
// Thread-safety: none (a RingClient's, on its thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace pulse::net::ring {

class ExtentAllocator {
 public:
  // An area of `bytes`, handed out in multiples of `unit` (a power of two;
  // `bytes` is rounded down to whole units).
  ExtentAllocator(size_t bytes, size_t unit);

  // The offset of `bytes` (rounded up to the unit) of free space, or
  // nullopt if no free extent is that long.  0 bytes take one unit.
  std::optional<size_t> Allocate(size_t bytes);
  // Returns what Allocate(bytes) gave at `offset`.  Freeing what was not
  // allocated is a programming error (checked: aborts).
  void Free(size_t offset, size_t bytes);

  size_t capacity() const { return capacity_; }
  size_t free_bytes() const { return free_bytes_; }
  // The longest extent Allocate() can give now.
  size_t largest_free() const;

 private:
  size_t Round(size_t bytes) const;

  size_t unit_;
  size_t capacity_;
  size_t free_bytes_;
  std::map<size_t, size_t> free_;  // offset -> length, disjoint, never adjacent
};

}  // namespace pulse::net::ring
