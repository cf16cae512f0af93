// Test helper: a block of host memory exposed as one far-memory range, with
// a bump allocator handing out far addresses.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "pulse/memory.h"

namespace pulse::testing {

class FarHeap {
 public:
  FarHeap(uint64_t base, size_t bytes, TenantId owner = 1, uint8_t perms = kPermReadWrite)
      : base_(base), mem_(bytes, 0), owner_(owner), perms_(perms) {}

  Range range() { return Range{base_, mem_.size(), mem_.data(), perms_, owner_}; }
  uint64_t base() const { return base_; }

  // Far address of `bytes` new zeroed bytes (8-byte aligned).
  uint64_t Alloc(size_t bytes) {
    const uint64_t at = used_;
    used_ += (bytes + 7) & ~size_t{7};
    if (used_ > mem_.size()) std::abort();  // tests size their heaps
    return base_ + at;
  }
  uint8_t* Host(uint64_t far) { return mem_.data() + (far - base_); }
  template <typename T>
  void Put(uint64_t far, T v) { std::memcpy(Host(far), &v, sizeof(T)); }
  template <typename T>
  T Get(uint64_t far) { T v; std::memcpy(&v, Host(far), sizeof(T)); return v; }
  const std::vector<uint8_t>& bytes() const { return mem_; }

 private:
  uint64_t base_;
  std::vector<uint8_t> mem_;
  TenantId owner_;
  uint8_t perms_;
  size_t used_ = 0;
};

}  // namespace pulse::testing
