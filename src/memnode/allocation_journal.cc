#include "memnode/allocation_journal.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace pulse::memnode {

struct AllocationJournal::Header {
  uint64_t magic;
  uint64_t version;
  uint64_t pool_bytes;
  uint64_t granularity;
  uint64_t node;
  uint64_t reserved[3];
};

struct AllocationJournal::Slot {
  uint32_t units;  // written last, cleared first
  uint32_t tenant;
  uint8_t perms;
  uint8_t lifetime;
  uint8_t reserved[6];
  uint64_t owner;
};

struct AllocationJournal::RootSlot {
  uint32_t used;  // written last, cleared first
  uint32_t tenant;
  uint64_t addr;
  char name[kMaxRootName + 1];  // NUL-terminated
};

namespace {
constexpr uint64_t kMagic = 0x6c6e72756f6a6c70;  // "pljourn" + 'l'
constexpr uint64_t kVersion = 2;  // 2: lifetimes and roots
}  // namespace

size_t AllocationJournal::BytesFor(uint64_t pool_bytes, uint64_t granularity) {
  return sizeof(Header) + kMaxRoots * sizeof(RootSlot) + pool_bytes / granularity * sizeof(Slot);
}

AllocationJournal::AllocationJournal(uint8_t* area, size_t bytes, uint64_t pool_bytes, uint64_t granularity,
                                     uint32_t node)
    : area_(area), bytes_(bytes), pool_bytes_(pool_bytes), granularity_(granularity), node_(node) {}

AllocationJournal::Slot* AllocationJournal::SlotAt(uint64_t offset) const {
  const uint64_t index = offset / granularity_;
  const size_t at = sizeof(Header) + kMaxRoots * sizeof(RootSlot) + index * sizeof(Slot);
  if (offset % granularity_ != 0 || at + sizeof(Slot) > bytes_) return nullptr;
  return reinterpret_cast<Slot*>(area_ + at);
}

Result<std::vector<JournalEntry>> AllocationJournal::Load() const {
  if (bytes_ < BytesFor(pool_bytes_, granularity_)) return Status::NotFound("journal: area too small");
  Header h;
  std::memcpy(&h, area_, sizeof h);
  if (h.magic != kMagic || h.version != kVersion || h.pool_bytes != pool_bytes_ || h.granularity != granularity_ ||
      h.node != node_)
    return Status::NotFound("journal: no journal of this pool");
  std::vector<JournalEntry> out;
  const uint64_t granules = pool_bytes_ / granularity_;
  for (uint64_t i = 0; i < granules; ++i) {
    const Slot* s = SlotAt(i * granularity_);
    const uint32_t units = std::atomic_ref<uint32_t>(const_cast<uint32_t&>(s->units)).load(std::memory_order_acquire);
    if (units == 0) continue;
    out.push_back(JournalEntry{i * granularity_, uint64_t{units} * granularity_, s->tenant, s->perms,
                               s->lifetime == 1 ? Lifetime::kDurable : Lifetime::kSession, s->owner});
  }
  return out;
}

void AllocationJournal::Format() {
  std::memset(area_, 0, std::min(bytes_, BytesFor(pool_bytes_, granularity_)));
  Header h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.pool_bytes = pool_bytes_;
  h.granularity = granularity_;
  h.node = node_;
  std::memcpy(area_, &h, sizeof h);
}

void AllocationJournal::Record(const JournalEntry& e) {
  Slot* s = SlotAt(e.offset);
  if (s == nullptr) return;
  std::atomic_ref<uint32_t>(s->units).store(0, std::memory_order_release);
  s->tenant = e.tenant;
  s->perms = e.perms;
  s->lifetime = static_cast<uint8_t>(e.lifetime);
  s->owner = e.owner;
  std::atomic_ref<uint32_t>(s->units).store(static_cast<uint32_t>(e.length / granularity_), std::memory_order_release);
}

void AllocationJournal::Erase(uint64_t offset) {
  Slot* s = SlotAt(offset);
  if (s == nullptr) return;
  std::atomic_ref<uint32_t>(s->units).store(0, std::memory_order_release);
}

AllocationJournal::RootSlot* AllocationJournal::RootAt(uint32_t slot) const {
  static_assert(sizeof(RootSlot) == 64);
  const size_t at = sizeof(Header) + size_t{slot} * sizeof(RootSlot);
  if (slot >= kMaxRoots || at + sizeof(RootSlot) > bytes_) return nullptr;
  return reinterpret_cast<RootSlot*>(area_ + at);
}

std::vector<RootEntry> AllocationJournal::LoadRoots() const {
  std::vector<RootEntry> out;
  for (uint32_t i = 0; i < kMaxRoots; ++i) {
    const RootSlot* r = RootAt(i);
    if (r == nullptr) break;
    if (std::atomic_ref<uint32_t>(const_cast<uint32_t&>(r->used)).load(std::memory_order_acquire) == 0) continue;
    out.push_back(RootEntry{i, r->tenant, r->addr, std::string(r->name, strnlen(r->name, kMaxRootName))});
  }
  return out;
}

void AllocationJournal::RecordRoot(const RootEntry& e) {
  RootSlot* r = RootAt(e.slot);
  if (r == nullptr) return;
  std::atomic_ref<uint32_t>(r->used).store(0, std::memory_order_release);
  r->tenant = e.tenant;
  r->addr = e.addr;
  std::memset(r->name, 0, sizeof r->name);
  std::memcpy(r->name, e.name.data(), std::min(e.name.size(), kMaxRootName));
  std::atomic_ref<uint32_t>(r->used).store(1, std::memory_order_release);
}

void AllocationJournal::EraseRoot(uint32_t slot) {
  RootSlot* r = RootAt(slot);
  if (r == nullptr) return;
  std::atomic_ref<uint32_t>(r->used).store(0, std::memory_order_release);
}

}  // namespace pulse::memnode
