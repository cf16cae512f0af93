// The global page address space of tiered memory (issue 16, seed 004
// section 4): far memory is cut into pages of one size (2 MB by default,
// any power of two from 4 KB to 1 GB), and a far address is (page id,
// offset in the page) packed into pulse's 64-bit far pointer:
//
//   far address = page id * page size + offset
//
// Page ids are therefore location-free names: page p's address lies in the
// span of its *home* memory node (FarBase(node) = (node + 1) * 2^40, see
// pulse/cluster.h), the node whose range it was first carved from, and
// pointers to it stay valid when the page moves to another rack (the page
// directory, pulse/tier/page_directory.h, says where it is now).  Addresses
// below FarBase(0) hold no page (pulse never hands them out).
//
// PageGeometry is a value type; immutable, so thread-safe.
#pragma once

#include <cstdint>

#include "pulse/status.h"

namespace pulse::tier {

using PageId = uint64_t;

// Memory node n's far addresses start at (n + 1) * kPageSpaceNodeSpan.  The
// same number as kFarSpan of pulse/cluster.h (a sibling layer this one may
// not include); tests/tier/page_address_test.cc asserts they agree.
inline constexpr uint64_t kPageSpaceNodeSpan = uint64_t{1} << 40;
inline constexpr uint64_t kDefaultPageSize = uint64_t{2} << 20;  // seed 004 section 6.1
inline constexpr uint64_t kMinPageSize = uint64_t{4} << 10;
inline constexpr uint64_t kMaxPageSize = uint64_t{1} << 30;

struct PageAddress {
  PageId page = 0;
  uint64_t offset = 0;
  bool operator==(const PageAddress&) const = default;
};

class PageGeometry {
 public:
  // InvalidArgument naming the size unless page_size is a power of two in
  // [kMinPageSize, kMaxPageSize].
  static Result<PageGeometry> Make(uint64_t page_size);
  // The 2 MB default.
  PageGeometry() : PageGeometry(21) {}

  uint64_t page_size() const { return uint64_t{1} << shift_; }
  unsigned shift() const { return shift_; }

  // Pages per memory node span (the most one node can home).
  uint64_t pages_per_node() const { return kPageSpaceNodeSpan >> shift_; }
  // The first and last valid page ids.
  PageId first_page() const { return kPageSpaceNodeSpan >> shift_; }
  PageId last_page() const { return (~uint64_t{0}) >> shift_; }

  // The far address of `a`.  InvalidArgument if the offset is not inside a
  // page or the page id is outside [first_page(), last_page()].
  Result<uint64_t> Encode(PageAddress a) const;
  // The (page, offset) of far address `addr`.  InvalidArgument for an
  // address below FarBase(0), which no page holds.
  Result<PageAddress> Decode(uint64_t addr) const;

  // Page `index` of memory node `node`'s span.  OutOfRange if the index is
  // not below pages_per_node() or the node's span does not fit in 64 bits.
  Result<PageId> PageOfNode(uint32_t node, uint64_t index) const;
  // The memory node whose span holds page `page` (its home), for a valid
  // page id.  InvalidArgument otherwise.
  Result<uint32_t> HomeNode(PageId page) const;

 private:
  explicit PageGeometry(unsigned shift) : shift_(shift) {}
  unsigned shift_;
};

}  // namespace pulse::tier
