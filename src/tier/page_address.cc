#include "pulse/tier/page_address.h"

#include <bit>

#include <fmt/format.h>

namespace pulse::tier {

Result<PageGeometry> PageGeometry::Make(uint64_t page_size) {
  if (!std::has_single_bit(page_size) || page_size < kMinPageSize || page_size > kMaxPageSize)
    return Status::InvalidArgument(
        fmt::format("page size {}: must be a power of two in [{}, {}]", page_size, kMinPageSize, kMaxPageSize));
  return PageGeometry(static_cast<unsigned>(std::countr_zero(page_size)));
}

Result<uint64_t> PageGeometry::Encode(PageAddress a) const {
  if (a.offset >= page_size())
    return Status::InvalidArgument(fmt::format("page address: offset {} outside a page of {} bytes", a.offset, page_size()));
  if (a.page < first_page() || a.page > last_page())
    return Status::InvalidArgument(
        fmt::format("page address: page id {} outside [{}, {}]", a.page, first_page(), last_page()));
  return (a.page << shift_) | a.offset;
}

Result<PageAddress> PageGeometry::Decode(uint64_t addr) const {
  if (addr < kPageSpaceNodeSpan)
    return Status::InvalidArgument(fmt::format("far address {:#x}: below every memory node's span", addr));
  return PageAddress{addr >> shift_, addr & (page_size() - 1)};
}

Result<PageId> PageGeometry::PageOfNode(uint32_t node, uint64_t index) const {
  if (index >= pages_per_node())
    return Status::OutOfRange(fmt::format("page index {} of node {}: a node spans {} pages", index, node, pages_per_node()));
  // Node n's span starts at page (n + 1) * pages_per_node(); the last span
  // that fits in 64 bits is node 2^24 - 2's.
  const uint64_t span = uint64_t{node} + 1;
  if (span >= (uint64_t{1} << (64 - 40)))
    return Status::OutOfRange(fmt::format("memory node {}: its span is beyond the 64-bit address space", node));
  return span * pages_per_node() + index;
}

Result<uint32_t> PageGeometry::HomeNode(PageId page) const {
  if (page < first_page() || page > last_page())
    return Status::InvalidArgument(fmt::format("page id {} outside [{}, {}]", page, first_page(), last_page()));
  return static_cast<uint32_t>(page / pages_per_node() - 1);
}

}  // namespace pulse::tier
