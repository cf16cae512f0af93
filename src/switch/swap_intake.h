// The metadata server's swap queue (docs/tier.md; seed 004 section 5.3,
// step 1 of the swap protocol): CPU nodes that find a page of another rack
// hot send "swap_request" {page, rack, hotness, reads, writes} to the
// switch; a request for a page whose swap is queued or under way is
// dropped, so duplicate requests cause one swap.  The requester's reported
// heat is kept per (rack, page) as the RackHeat the coordinator compares
// (steps 2-3).
//
// With a SwapDriver (`pulse switch --swaps on`) the requests are handed to
// it, which runs them one at a time off the switch's thread (steps 2-6);
// without one (the default) they stay queued and pages do not move.
//
// Not thread-safe: the switch's thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "pulse/status.h"
#include "switch/directory_host.h"
#include "switch/swap_driver.h"

namespace pulse::switchd {

class SwapIntake {
 public:
  // `directory` must outlive this; so must `driver` if not null.
  explicit SwapIntake(DirectoryHost* directory, SwapDriver* driver = nullptr)
      : directory_(directory), driver_(driver) {}
  void set_driver(SwapDriver* driver) { driver_ = driver; }

  // A "swap_request" body.  Returns {"queued": bool} (false: a request for
  // the page waits or runs already).  InvalidArgument for a missing or bad
  // field or an unknown rack; NotFound for a page the directory does not
  // hold.
  Result<nlohmann::json> Request(const nlohmann::json& body);

  // The driver finished a request (on the switch's thread).
  void Finished(const SwapResult& result);

  // For `stats`: requests, duplicates, queued (waiting or running), and
  // with a driver: finished, outcomes (by SwapOutcomeName), failed and the
  // last failure (code and message).
  nlohmann::json StatsJson() const;

 private:
  DirectoryHost* directory_;
  SwapDriver* driver_;
  HeatMap reported_;
  std::set<tier::PageId> pending_;
  uint64_t requests_ = 0;
  uint64_t duplicates_ = 0;
  uint64_t finished_ = 0;
  uint64_t failed_ = 0;
  std::map<std::string, uint64_t> outcomes_;
  Status last_failure_;
};

}  // namespace pulse::switchd
