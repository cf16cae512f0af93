// ExtentAllocator: hands out byte ranges of a double-layer ring's data
// area (ring_format.h) and takes them back in any order.
//
// Seed 004's data buffer is a plain ring buffer, freed in order; here an
// entry's space is freed when its answer is taken, and answers come in any
// order, so a ring buffer would let one slow entry hold back the space of
// every entry after it (the head-of-line blocking the double layer exists
// to remove).  First fit: the lowest run of free units long enough.  A
// bitmap of units (one bit per unit, 64 units a word), so that neither
// Allocate nor Free allocates memory (both run once per ring entry); the
// search skips whole used words and starts at the lowest word with a free
// unit.
//
// Thread-safety: none (a RingClient's, on its thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace pulse::net::ring {

class ExtentAllocator {
 public:
  // An area of `bytes`, handed out in multiples of `unit` (`bytes` is
  // rounded down to whole units).
  ExtentAllocator(size_t bytes, size_t unit);

  // The offset of `bytes` (rounded up to the unit) of free space, or
  // nullopt if no free run is that long.  0 bytes take one unit.
  std::optional<size_t> Allocate(size_t bytes);
  // Returns what Allocate(bytes) gave at `offset`.  Freeing what was not
  // allocated is a programming error (checked: aborts).
  void Free(size_t offset, size_t bytes);

  size_t capacity() const { return units_ * unit_; }
  size_t free_bytes() const { return free_units_ * unit_; }
  // The longest run Allocate() can give now (a scan of the whole area:
  // for tests and stats, not the per-entry path).
  size_t largest_free() const;

 private:
  size_t Units(size_t bytes) const;
  bool Used(size_t u) const { return (used_[u / 64] >> (u % 64)) & 1; }
  void Mark(size_t first, size_t count, bool used);

  size_t unit_;
  size_t units_;
  size_t free_units_;
  size_t lowest_free_word_ = 0;  // no word below it has a free unit
  std::vector<uint64_t> used_;   // bit u: unit u is allocated (units past the end read as used)
};

}  // namespace pulse::net::ring
