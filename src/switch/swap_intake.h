// The metadata server's swap queue (docs/tier.md; seed 004 section 5.3,
// step 1 of the swap protocol): CPU nodes that find a page of another rack
// hot send "swap_request" {page, rack, hotness, reads, writes} to the
// switch; requests queue FIFO in the SwapCoordinator
// (pulse/tier/swap_coordinator.h) and one for a page already queued is
// dropped.  The requester's reported heat is kept per (rack, page) as the
// RackHeat the coordinator compares (steps 2-3).
//
// Not built yet: the transfers.  Nothing runs ProcessNext, so the queue
// does not drain and pages do not move: Invalidate, Transfer and Commit of
// this fabric answer FailedPrecondition naming what is missing.
//
// Not thread-safe: the switch's thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "pulse/status.h"
#include "pulse/tier/swap_coordinator.h"
#include "switch/directory_host.h"

namespace pulse::switchd {

class SwapIntake final : private tier::SwapFabric {
 public:
  // `directory` must outlive this.
  explicit SwapIntake(DirectoryHost* directory);

  // A "swap_request" body.  Returns {"queued": bool} (false: a request for
  // the page waits already).  InvalidArgument for a missing or bad field or
  // an unknown rack; NotFound for a page the directory does not hold.
  Result<nlohmann::json> Request(const nlohmann::json& body);

  // For `stats`: requests, duplicates, queued.
  nlohmann::json StatsJson() const;

 private:
  tier::PageHeat RackHeat(tier::RackId rack, tier::PageId page) override;
  Status Invalidate(tier::RackId rack, tier::PageId page) override;
  Status Transfer(tier::Frame from, tier::Frame to) override;
  Status Commit(const tier::PageDirectory& directory, std::span<const tier::PageId> pages) override;

  DirectoryHost* directory_;
  tier::SwapCoordinator coordinator_;
  std::map<std::pair<tier::RackId, tier::PageId>, tier::PageHeat> reported_;
  uint64_t requests_ = 0;
  uint64_t duplicates_ = 0;
};

}  // namespace pulse::switchd
