// The page directory as the control plane distributes it (docs/tier.md,
// "The directory in the control plane").  The switch owns the directory of
// a racked cluster and sends it inside the routing table it already pushes
// (kAmRouting, and the "table" of its hello / register_memnode answers:
// src/protocol/routing_table.h), as one more member of that JSON object:
//
//   "tier": {"page_bytes":P, "racks":{"a":0,"b":1,...}, "directory":{...}}
//
// where "directory" is PageDirectory's encoding (pulse/tier/page_directory.h)
// and "racks" names the rack ids.  A table without "tier" belongs to a
// cluster without racks.  Receivers keep the directory of a push only if its
// version is higher than theirs (PageLocator::Adopt), independently of the
// routing table's own version: one push mechanism, two versioned tables.
//
// Internal to the server and tier layers (it speaks nlohmann::json).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "pulse/status.h"
#include "pulse/tier/page_address.h"
#include "pulse/tier/page_directory.h"

namespace pulse::tier {

// The member of the routing table's JSON that carries the directory.
inline constexpr const char* kTierPushMember = "tier";

struct TierPush {
  PageGeometry geometry;
  std::map<std::string, RackId> racks;  // rack name -> id
  PageDirectory directory;
};

// The "tier" member's value.
nlohmann::json EncodeTierPush(const TierPush& push);
// Reads the "tier" member of a routing table's JSON: nullopt if there is
// none; InvalidArgument naming the bad field (page_bytes, racks, directory:
// the directory decoder's message) otherwise.
Result<std::optional<TierPush>> DecodeTierPush(const nlohmann::json& routing_table);

// Where a far address lives now.
struct PageLocation {
  PageId page = 0;
  uint32_t node = 0;         // the memory node holding the page now
  uint64_t pool_offset = 0;  // of the address in that node's pool
  uint32_t page_version = 0;
  bool home = true;  // the page is in its home node's frame of the same index
};

// Where the page holding `addr` is now by `push`; nullopt if its directory
// does not hold that page (an address outside every racked node's frames):
// then the routing table alone decides.
std::optional<PageLocation> LocateIn(const TierPush& push, uint64_t addr);

// A receiver's copy of the directory (a memory node's, the switch's router):
// what it adopted from pushes, and for an address, where its page is.
// Not thread-safe.
class PageLocator {
 public:
  // Takes the "tier" member of `routing_table` if its directory's version is
  // higher than the one held (a push that arrives after a later one is
  // ignored).  Returns whether it did; InvalidArgument (DecodeTierPush's) for
  // a malformed member, leaving the copy as it was.  A table without the
  // member changes nothing.
  Result<bool> Adopt(const nlohmann::json& routing_table);
  // Forgets everything (a restarted switch counts its versions from 0).
  void Reset() { push_.reset(); }

  // 0 before any directory was adopted.
  uint32_t version() const { return push_ ? push_->directory.version() : 0; }
  const TierPush* push() const { return push_ ? &*push_ : nullptr; }

  // Where the page holding `addr` is now; nullopt if no adopted directory
  // holds that page (no racks, or an address outside every racked node's
  // frames): then the routing table alone decides.
  std::optional<PageLocation> Locate(uint64_t addr) const {
    return push_ ? LocateIn(*push_, addr) : std::nullopt;
  }

  // Locates the node holding `addr` given a page-blind fallback (the routing
  // table's owner): the directory's node for a paged address, else
  // `fallback`.
  template <typename Fallback>
  std::optional<uint32_t> OwnerOf(uint64_t addr, Fallback fallback) const {
    if (std::optional<PageLocation> l = Locate(addr)) return l->node;
    return fallback(addr);
  }

 private:
  std::optional<TierPush> push_;
};

}  // namespace pulse::tier
