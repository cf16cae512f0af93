// Range-based translation and protection (seed 000 4.2, Fig. 6).
//
// Far memory is a 64-bit global address space.  A memory node maps ranges of
// it onto local host memory; each range carries an owner (tenant) and
// permissions.  A range table is what a memory pipeline consults to turn
// cur_ptr into a host pointer.
#pragma once

#include <cstdint>
#include <vector>

#include "pulse/status.h"

namespace pulse {

enum Permission : uint8_t {
  kPermRead = 1,
  kPermWrite = 2,
  kPermReadWrite = 3,
};

using TenantId = uint32_t;

struct Range {
  uint64_t base = 0;      // first far address
  uint64_t length = 0;    // bytes
  uint8_t* host = nullptr;  // local memory backing [base, base+length); not owned
  uint8_t perms = kPermReadWrite;
  TenantId owner = 0;

  bool Contains(uint64_t addr) const { return addr - base < length; }
  // True if [addr, addr+len) lies inside this range.
  bool ContainsSpan(uint64_t addr, uint64_t len) const {
    return addr - base < length && len <= length - (addr - base);
  }
  uint8_t* Translate(uint64_t addr) const { return host + (addr - base); }
};

// A sorted set of non-overlapping ranges.
// Thread-compatible: lookups may run concurrently with each other, not with
// Add/Remove (memory nodes rebuild and swap tables instead of mutating one
// that engines are reading).
class RangeTable {
 public:
  // Adds a range.  InvalidArgument if it is empty, wraps around, or overlaps
  // an existing range (the message names both).
  Status Add(const Range& range);
  // Removes the range starting at base.  NotFound if there is none.
  Status Remove(uint64_t base);
  // The range containing addr, or nullptr.  O(log n).
  const Range* Find(uint64_t addr) const;

  const std::vector<Range>& ranges() const { return ranges_; }
  size_t size() const { return ranges_.size(); }

 private:
  std::vector<Range> ranges_;  // sorted by base
};

}  // namespace pulse
