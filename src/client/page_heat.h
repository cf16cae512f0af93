// The CPU node's side of hot pages (docs/tier.md, seed 004 section 5.3):
// the page table cached from the directory the switch pushes with the
// routing table (Connections::pages), per-page hotness of this CPU node's
// accesses to pages in other racks (pulse/tier/hotness.h), and the swap
// request to the metadata server (the switch's "swap_request") when such a
// page becomes hot.
//
// Counts only what goes over the fabric to another rack: accesses served by
// the rack tier, pages of this rack reached the normal way, and addresses no
// directory holds are not counted.  An access is counted for the page of its
// first byte.  One request per page until the page's own directory entry
// changes (it moved), or a newer directory came (swaps ran, so this one
// was rejected or failed) and kRequestAgainAfter has passed since: other
// pages' moves alone do not make it ask again, so a swap queue of many
// pages is not flooded with repeats.
//
// Thread-safety: none; it belongs to its Client's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>

#include "client/connections.h"
#include "pulse/tier/hotness.h"

namespace pulse {

class PageHeatCounter {
 public:
  // `connections` and `counters` must outlive this.  The thresholds are
  // ClientOptions::hotness (valid: Client::Connect checks them).
  PageHeatCounter(Connections* connections, ClientCounters* counters);

  // An access of [addr, ...) that goes the normal way (not the rack tier).
  // Sends the swap request if it made the page hot; a request that fails is
  // counted (swap_request_errors) and does not fail the access.
  void OnFabricAccess(uint64_t addr, tier::AccessKind kind);

 private:
  Connections* connections_;
  ClientCounters* counters_;
  tier::SteadyClock clock_;
  tier::HotnessTracker tracker_;
  // Pages asked for: the page's directory entry and the directory's
  // versions then, and when.
  struct Requested {
    uint32_t page_version = 0;
    uint32_t directory_version = 0;
    std::chrono::steady_clock::time_point at{};
  };
  static constexpr std::chrono::seconds kRequestAgainAfter{1};
  std::map<tier::PageId, Requested> requested_;
};

}  // namespace pulse
