// The slab allocator of tiered memory (issue 16, seed 004 section 4): hands
// out far addresses of objects inside pages of the global page address
// space.  Sizes are rounded up to a power-of-two class (min_class bytes up
// to a whole page); a page, once carved for a class, holds slots of that
// class only, each aligned to its size.  An allocation for rack R takes a
// slot from a partly used page of its class in rack R, else carves an empty
// page of rack R, else does the same in another rack (a remote page is
// better than none).  A page's rack is read from the page directory at the
// time of the call, so pages that moved count for their new rack.  Freeing
// the last slot of a page makes it empty again: any class may carve it, or
// the owner may Release it (give it back to the directory).
//
// Not thread-safe (in Rcmp the rack daemon owns the allocator).  The
// directory must outlive the allocator.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "pulse/status.h"
#include "pulse/tier/page_address.h"
#include "pulse/tier/page_directory.h"

namespace pulse::tier {

class SlabAllocator {
 public:
  static constexpr uint64_t kDefaultMinClass = 16;

  // InvalidArgument unless min_class is a power of two, at least 8 and at
  // most the page size.
  static Result<SlabAllocator> Make(PageGeometry geometry, const PageDirectory* directory,
                                    uint64_t min_class = kDefaultMinClass);

  // The class (slot size) a request of `size` bytes gets.  InvalidArgument
  // for 0 or more than a page.
  Result<uint64_t> ClassOf(uint64_t size) const;

  // Gives the allocator a page to carve.  NotFound unless the directory
  // has placed it; AlreadyExists if the allocator has it.
  Status AddPage(PageId page);
  // Takes an empty page back (the caller may then Remove it from the
  // directory).  NotFound if the allocator does not have it,
  // FailedPrecondition if a slot of it is in use.
  Status Release(PageId page);

  // The far address of a free slot for `size` bytes, preferring rack
  // `rack` (see above).  InvalidArgument as ClassOf; ResourceExhausted if
  // no page has room.
  Result<uint64_t> Allocate(uint64_t size, RackId rack);
  // Returns the slot at `addr`.  InvalidArgument if addr is not the start
  // of a slot in use (never allocated, already freed, inside a slot, or in
  // a page the allocator does not have).
  Status Free(uint64_t addr);

  // The pages with no slot in use, by id.
  std::vector<PageId> EmptyPages() const { return {empty_.begin(), empty_.end()}; }
  size_t page_count() const { return pages_.size(); }

 private:
  struct Page {
    uint64_t slot_size = 0;       // 0: empty, not carved
    uint64_t next_uncarved = 0;   // slots below it were handed out at least once
    std::vector<uint64_t> freed;  // slot indexes returned below next_uncarved
    std::vector<bool> in_use;     // by slot index
    uint64_t used = 0;
  };
  SlabAllocator(PageGeometry geometry, const PageDirectory* directory, uint64_t min_class)
      : geometry_(geometry), directory_(directory), min_class_(min_class) {}
  bool InRack(PageId page, RackId rack) const;
  // A page to allocate from: partly used of this class, else empty; from
  // `rack` if local, else from any other rack; nullopt if none.
  std::optional<PageId> Pick(uint64_t slot_size, RackId rack, bool local) const;
  uint64_t TakeSlot(PageId id, Page& p, uint64_t slot_size);

  PageGeometry geometry_;
  const PageDirectory* directory_;
  uint64_t min_class_;
  std::map<PageId, Page> pages_;
  std::set<PageId> empty_;
  std::map<uint64_t, std::set<PageId>> partial_;  // slot size -> pages with a free slot
};

}  // namespace pulse::tier
