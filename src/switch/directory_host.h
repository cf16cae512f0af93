// The switch's page directory (docs/tier.md, "The directory in the control
// plane"): for a cluster whose memory nodes name racks, the switch is the
// metadata server of seed 004 and owns the directory of the global page
// address space (pulse/tier/page_directory.h).  A memory node that
// registers with a rack declares its pool's frames (pool bytes / page
// bytes, the tail past the last whole page stays unpaged) and each of its
// home pages is placed in the frame of the same index, so an unmoved page
// is where the memory node's range says.  The directory travels with the
// routing table (tier/tier_push.h) in every push and hello /
// register_memnode answer; the switch's router follows it (Owner).
//
// A node that registers again (restarted, reconnected) keeps its frames and
// whatever pages they hold now; it must name the same rack and pool size.
//
// Not thread-safe: the switch's thread owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "pulse/status.h"
#include "tier/tier_push.h"

namespace pulse::switchd {

class DirectoryHost {
 public:
  // page_bytes: a power of two in [4 KB, 1 GB] (PageGeometry::Make);
  // InvalidArgument naming it otherwise.
  static Result<DirectoryHost> Make(uint64_t page_bytes);

  // A memory node registering with `rack` (empty: no rack, nothing to do)
  // and a pool of `pool_bytes`.  Returns whether the directory changed.
  // InvalidArgument if the pool holds no whole page; FailedPrecondition if
  // the node registered before under another rack or frame count.
  Result<bool> Register(uint32_t node, const std::string& rack, uint64_t pool_bytes);

  // True once a racked node registered: the routing table then carries the
  // "tier" member.
  bool active() const { return !state_.directory.nodes().empty(); }
  // The "tier" member of the routing table's JSON (tier/tier_push.h).
  nlohmann::json PushMember() const;
  // The node holding the page of `addr` now; nullopt for an address no
  // racked node's frames hold.
  std::optional<uint32_t> Owner(uint64_t addr) const;
  // For `stats`: version, page_bytes, racks, pages, moved (pages away from
  // their home frame).
  nlohmann::json StatsJson() const;

  // Puts `pages` in the frames `moved` (a swap's result) gives them,
  // exchanging with the page a target frame holds (a swap's victim).
  // Returns whether the directory changed; NotFound or FailedPrecondition
  // (the directory's) if `moved` names a page or frame it does not hold,
  // leaving it as it was.
  Result<bool> ApplyMoves(const tier::PageDirectory& moved, std::span<const tier::PageId> pages);

  const tier::TierPush& state() const { return state_; }
  // The directory itself, for the swap protocol (which changes it only by
  // completed swaps).
  tier::PageDirectory* mutable_directory() { return &state_.directory; }

 private:
  explicit DirectoryHost(tier::PageGeometry geometry);
  tier::TierPush state_;
};

}  // namespace pulse::switchd
