// What the cluster tests of tiered memory share (directory_cluster_test.cc,
// page_move_cluster_test.cc): the flags of a racked memory node, a client
// of a rack, and waiting for what the nodes' stats report.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/client.h"
#include "support/local_rack.h"

namespace pulse::testing {

// The flags that make a memory node the one of rack `rack` (tenant 1 may
// map its pool).
inline std::vector<std::string> RackFlags(const char* rack) { return {"--rack", rack, "--rack-tenants", "1"}; }

// Polls `probe` (a function filling `last` with what it looked at and
// returning whether it is done), letting the rack's CPU node run between
// polls, for at most `limit`; on timeout fails the test showing `last`.
template <typename Probe>
bool Eventually(LocalRack& rack, const std::string& what, Probe probe,
                std::chrono::steady_clock::duration limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  nlohmann::json last;
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe(&last)) return true;
    rack.cpu().Pump(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << what << ": " << last.dump();
  return false;
}

// Waits until memory node `node` reports the directory version `version`.
inline bool WaitForTierVersion(LocalRack& rack, uint32_t node, uint64_t version) {
  return Eventually(rack, "memory node " + std::to_string(node) + " stats", [&](nlohmann::json* s) {
    *s = rack.MemNodeStats(node)["counters"];
    return s->value("tier_version", uint64_t{0}) == version;
  });
}

// A client of rack `rack` (empty: none) placing allocations where it is told
// (in slabs of `slab_bytes`; 0: the default).
inline std::unique_ptr<Client> ConnectToRack(LocalRack& rack, const std::string& rack_name,
                                             double hot_threshold = 4, uint64_t slab_bytes = 0) {
  ClientOptions o;
  if (slab_bytes != 0) o.slab_bytes = slab_bytes;
  o.switch_address = rack.switch_address();
  o.policy = AllocationPolicy::kPartitioned;
  o.request_timeout = std::chrono::milliseconds(1000);
  o.rack = rack_name;
  o.hotness.hot_threshold = hot_threshold;
  auto c = Client::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

}  // namespace pulse::testing
