// The memory node's allocations, recorded in the pool's metadata area
// (SharedPool::metadata()) as they happen, so that a node restarted after a
// crash re-attaches its pool (same shared-memory name) with every range,
// owner and permission it had: acknowledged data stays readable and stays
// protected.
//
// Layout: a header (magic, version, pool bytes, granularity, node id), then
// kMaxRoots 64-byte root slots (the durable roots: tenant, name, far
// address), then one 24-byte slot per granule of the pool; the slot of an
// allocation's first granule holds its length in granules (0: no allocation
// starts here), tenant, permissions and lifetime (a client session's id, or
// the durable root it belongs to).  The length (a root's "used" word) is
// written last and cleared first, so a crash in the middle of an update
// leaves either the old or the new state of that slot.  An allocation whose
// reply never reached its caller (a crash right after Record) is kept, as
// part of its session: reclaimed with the session, never handed out twice.
//
// Not thread-safe: the memory node's thread uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pulse/status.h"

namespace pulse::memnode {

// How long an allocation lives (docs/cluster.md "Memory lifetimes").
enum class Lifetime : uint8_t {
  kSession = 0,  // until its client session ends or its lease expires
  kDurable = 1,  // until its root (or its tenant's data) is dropped
};

struct JournalEntry {
  uint64_t offset = 0;  // in the pool
  uint64_t length = 0;
  uint32_t tenant = 0;
  uint8_t perms = 0;
  Lifetime lifetime = Lifetime::kSession;
  // kSession: the session id; kDurable: the root's slot (RootEntry::slot).
  uint64_t owner = 0;
};

// A named durable root of one tenant: a name a later client Open()s, and
// the far address it names (0 on the nodes that only hold its memory).
struct RootEntry {
  uint32_t slot = 0;
  uint32_t tenant = 0;
  uint64_t addr = 0;
  std::string name;
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

  // Roots: at most kMaxRoots, names of 1..kMaxRootName bytes.
  static constexpr uint32_t kMaxRoots = 256;
  static constexpr size_t kMaxRootName = 47;
  // The roots recorded (after a successful Load()).
  std::vector<RootEntry> LoadRoots() const;
  // Writes `entry` into entry.slot (< kMaxRoots; the caller picks a free
  // one) / clears a slot.
  void RecordRoot(const RootEntry& entry);
  void EraseRoot(uint32_t slot);

 private:
  struct Header;
  struct Slot;
  struct RootSlot;
  Slot* SlotAt(uint64_t offset) const;
  RootSlot* RootAt(uint32_t slot) const;

  uint8_t* area_;
  size_t bytes_;
  uint64_t pool_bytes_;
  uint64_t granularity_;
  uint32_t node_;
};

}  // namespace pulse::memnode
