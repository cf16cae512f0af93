// The memory node's allocations, recorded in the pool's metadata area
// (SharedPool::metadata()) as they happen, so that a node restarted after a
// crash re-attaches its pool (same shared-memory name) with every range,
// owner and permission it had: acknowledged data stays readable and stays
// protected.
//
// Layout: a header (magic, version, pool bytes, granularity, node id), then
// one 16-byte slot per granule of the pool; the slot of an allocation's
// first granule holds its length in granules (0: no allocation starts
// here), tenant and permissions.  The length is written last and cleared
// first, so a crash in the middle of an update leaves either the old or the
// new state of that slot.  An allocation whose reply never reached its
// caller (a crash right after Record) is kept: leaked, never handed out twice.
//
// Not thread-safe: the memory node's thread uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pulse/status.h"

namespace pulse::memnode {

struct JournalEntry {
  uint64_t offset = 0;  // in the pool
  uint64_t length = 0;
  uint32_t tenant = 0;
  uint8_t perms = 0;
};

class AllocationJournal {
 public:
  // Metadata bytes needed for a pool of `pool_bytes` at `granularity`.
  static size_t BytesFor(uint64_t pool_bytes, uint64_t granularity);

  // Uses [area, area + bytes) (at least BytesFor); the caller keeps it mapped.
  AllocationJournal(uint8_t* area, size_t bytes, uint64_t pool_bytes, uint64_t granularity, uint32_t node);

  // The allocations recorded by an earlier process for the same pool (same
  // pool size, granularity and node).  NotFound if the area holds no journal
  // of this pool (a fresh pool, or another configuration).
  Result<std::vector<JournalEntry>> Load() const;
  // Clears the area and writes the header: no allocations.
  void Format();
  void Record(const JournalEntry& entry);
  void Erase(uint64_t offset);

 private:
  struct Header;
  struct Slot;
  Slot* SlotAt(uint64_t offset) const;

  uint8_t* area_;
  size_t bytes_;
  uint64_t pool_bytes_;
  uint64_t granularity_;
  uint32_t node_;
};

}  // namespace pulse::memnode
