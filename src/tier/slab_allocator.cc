#include "pulse/tier/slab_allocator.h"

#include <bit>

#include <fmt/format.h>

namespace pulse::tier {

Result<SlabAllocator> SlabAllocator::Make(PageGeometry geometry, const PageDirectory* directory, uint64_t min_class) {
  if (!std::has_single_bit(min_class) || min_class < 8 || min_class > geometry.page_size())
    return Status::InvalidArgument(
        fmt::format("slab allocator: min_class {} must be a power of two in [8, {}]", min_class, geometry.page_size()));
  return SlabAllocator(geometry, directory, min_class);
}

Result<uint64_t> SlabAllocator::ClassOf(uint64_t size) const {
  if (size == 0 || size > geometry_.page_size())
    return Status::InvalidArgument(
        fmt::format("slab allocator: size {} (must be in [1, page size {}])", size, geometry_.page_size()));
  return std::max(min_class_, std::bit_ceil(size));
}

Status SlabAllocator::AddPage(PageId page) {
  if (directory_->Find(page) == nullptr)
    return Status::NotFound(fmt::format("slab allocator: page {} is not in the directory", page));
  if (pages_.count(page) != 0) return Status::AlreadyExists(fmt::format("slab allocator: page {} is added", page));
  pages_[page] = Page{};
  empty_.insert(page);
  return Status::Ok();
}

Status SlabAllocator::Release(PageId page) {
  auto it = pages_.find(page);
  if (it == pages_.end()) return Status::NotFound(fmt::format("slab allocator: no page {}", page));
  if (it->second.used != 0)
    return Status::FailedPrecondition(fmt::format("slab allocator: page {} has {} slots in use", page, it->second.used));
  empty_.erase(page);
  pages_.erase(it);
  return Status::Ok();
}

bool SlabAllocator::InRack(PageId page, RackId rack) const {
  const PageEntry* e = directory_->Find(page);
  return e != nullptr && e->rack == rack;
}

std::optional<PageId> SlabAllocator::Pick(uint64_t slot_size, RackId rack, bool local) const {
  // Partly used pages first, so empty ones stay whole for other classes and
  // for release.
  auto partial = partial_.find(slot_size);
  if (partial != partial_.end())
    for (PageId id : partial->second)
      if (InRack(id, rack) == local && directory_->Find(id) != nullptr) return id;
  for (PageId id : empty_)
    if (InRack(id, rack) == local && directory_->Find(id) != nullptr) return id;
  return std::nullopt;
}

uint64_t SlabAllocator::TakeSlot(PageId id, Page& p, uint64_t slot_size) {
  if (p.slot_size == 0) {  // carve an empty page
    p.slot_size = slot_size;
    p.next_uncarved = 0;
    p.freed.clear();
    p.in_use.assign(geometry_.page_size() / slot_size, false);
    empty_.erase(id);
    partial_[slot_size].insert(id);
  }
  uint64_t slot;
  if (!p.freed.empty()) {
    slot = p.freed.back();
    p.freed.pop_back();
  } else {
    slot = p.next_uncarved++;
  }
  p.in_use[slot] = true;
  ++p.used;
  if (p.used == p.in_use.size()) partial_[slot_size].erase(id);
  return slot;
}

Result<uint64_t> SlabAllocator::Allocate(uint64_t size, RackId rack) {
  PULSE_ASSIGN_OR_RETURN(uint64_t slot_size, ClassOf(size));
  std::optional<PageId> id = Pick(slot_size, rack, /*local=*/true);
  if (!id) id = Pick(slot_size, rack, /*local=*/false);
  if (!id)
    return Status::ResourceExhausted(
        fmt::format("slab allocator: no page has a free {}-byte slot (of {} pages)", slot_size, pages_.size()));
  const uint64_t slot = TakeSlot(*id, pages_.at(*id), slot_size);
  return geometry_.Encode(PageAddress{*id, slot * slot_size});
}

Status SlabAllocator::Free(uint64_t addr) {
  PULSE_ASSIGN_OR_RETURN(PageAddress a, geometry_.Decode(addr));
  auto it = pages_.find(a.page);
  auto bad = [&](const char* why) {
    return Status::InvalidArgument(fmt::format("slab allocator: free of {:#x}: {}", addr, why));
  };
  if (it == pages_.end()) return bad("not in a page of this allocator");
  Page& p = it->second;
  if (p.slot_size == 0) return bad("its page has no slot in use");
  if (a.offset % p.slot_size != 0) return bad("not the start of a slot");
  const uint64_t slot = a.offset / p.slot_size;
  if (!p.in_use[slot]) return bad("the slot is not in use");
  const bool was_full = p.used == p.in_use.size();
  p.in_use[slot] = false;
  p.freed.push_back(slot);
  --p.used;
  if (p.used == 0) {  // all free: the page is empty again, for any class
    partial_[p.slot_size].erase(a.page);
    p = Page{};
    empty_.insert(a.page);
  } else if (was_full) {
    partial_[p.slot_size].insert(a.page);
  }
  return Status::Ok();
}

}  // namespace pulse::tier
