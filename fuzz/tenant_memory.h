// The far memory the engine-facing fuzz targets run programs over: a few
// small ranges of two tenants (read-write, read-only, write-only, and one of
// tenant 2 right after one of tenant 1, so a window that crosses a range end
// lands in another tenant's bytes), each in its own heap block between guard
// bytes.  Every 8-byte word is a far pointer into some range (so traversals
// go somewhere), a small integer, or noise, from a fixed seed: the same
// memory for every input.  Copyable: each copy owns its bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "pulse/memory.h"
#include "pulse/traversal.h"

namespace pulse::fuzz {

inline constexpr TenantId kTenantA = 1;
inline constexpr TenantId kTenantB = 2;

class TenantMemory {
 public:
  TenantMemory();

  // A range table over this copy's bytes.
  RangeTable Table();
  size_t range_count() const { return blocks_.size(); }
  // Range i as the table holds it (host pointer into this copy).
  Range range(size_t i);
  // A far address chosen by two input bytes: inside one of the ranges
  // (possibly near its end), or in no range at all.
  uint64_t PickAddress(uint8_t which, uint8_t offset) const;
  // Fills `out` with the same kind of words as the memory holds, from `seed`.
  void FillWords(uint64_t seed, std::vector<uint8_t>* out) const;

  // Overwrites every range `tenant` may not read with other words (from
  // `seed`): what that tenant computes must not change (non-interference).
  void ScrambleHiddenFrom(TenantId tenant, uint64_t seed);

  // Fails unless the guard bytes are intact and every range `tenant` may not
  // write still equals `original`.
  void CheckUntouched(const TenantMemory& original, TenantId tenant, const char* who) const;
  // Fails unless both copies hold the same bytes in every range.
  void CheckSame(const TenantMemory& other, const char* who) const;

 private:
  struct Block {
    uint64_t base;
    uint64_t length;
    uint8_t perms;
    TenantId owner;
    std::vector<uint8_t> bytes;  // guard, range, guard
  };
  std::vector<Block> blocks_;
};

// FarMemory that checks the reference interpreter: every access it allows
// lies inside one range of the tenant, with the needed permission.
class CheckedMemory : public FarMemory {
 public:
  CheckedMemory(const RangeTable& table, TenantId tenant) : table_(table), tenant_(tenant), inner_(table, tenant) {}
  TraversalStatus ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) override;
  TraversalStatus Store(uint64_t addr, const uint8_t* src, uint32_t len) override;

 private:
  void CheckAllowed(uint64_t addr, uint64_t len, uint8_t perm, const char* what) const;
  const RangeTable& table_;
  TenantId tenant_;
  RangeTableMemory inner_;
};

}  // namespace pulse::fuzz
