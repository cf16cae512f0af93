// The client's connections: the switch and every memory node, the cluster
// membership the switch reports (which nodes exist, which are alive, which
// a restarted switch has not listed yet), and recovery of lost connections
// (ClientOptions::reconnect_timeout).  Owns the client's Worker (the
// fabric) and its ControlClient.
//
// Thread-safety: none; it belongs to its Client's thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/control_client.h"
#include "protocol/outbox.h"
#include "protocol/routing_table.h"
#include "pulse/client.h"
#include "pulse/net.h"
#include "rack/rack_pool.h"
#include "tier/tier_push.h"

namespace pulse {

struct MemNode {
  uint32_t id = 0;
  std::string address;
  uint64_t base = 0;
  uint64_t size = 0;
  net::EndpointId ep = net::kInvalidEndpoint;
  bool lost = false;  // the connection failed; EnsureNode reconnects
  // The node's rack pool, if its last hello offered it (docs/racks.md).
  std::optional<rack::PoolOffer> rack_pool;
};

struct Connections {
  // `options` and `counters` must outlive this (reconnections are counted).
  Connections(ClientOptions& options, ClientCounters& counters) : options(options), counters(counters) {}

  // Creates the worker, connects to the switch and to every live memory
  // node it lists (adopting their engine calibration unless told not to).
  // Errors: Unavailable / Timeout naming the address that failed.  May
  // throw on a malformed answer (Client::Connect turns that into a value).
  Status Open();

  // Connects to memory node `n` at n.address: endpoint, hello.  (Remote
  // keys are per allocation: OneSidedAccess.)
  // Returns the node's hello answer.
  Result<nlohmann::json> ConnectNode(MemNode& n);
  // Ready to use memory node `n`: reconnects a lost connection if the
  // switch lists the node as alive (it may have restarted elsewhere).
  Status EnsureNode(MemNode& n);
  // Ready to send through the switch: reconnects a lost one (bounded by
  // reconnect_timeout; see ClientOptions).
  Status EnsureSwitch();
  // A traversal starting on a node the (restarted) switch did not list.
  Status CheckRouted(uint64_t cur_ptr);
  // Takes the routing mode and table of a switch's hello answer.  `fresh`:
  // the answer of a (re)joined switch, whose versions may start again.
  void AdoptRouting(const nlohmann::json& hello, bool fresh);
  // Takes a routing table the switch pushed (kAmRouting) if it is newer.
  void AdoptPushedTable(std::span<const uint8_t> payload);
  // A connection failed (the worker's disconnect handler): true if it was
  // the switch.
  bool OnDisconnect(net::EndpointId ep);

  // Memory node `node`'s endpoint if it is usable now: known, its
  // connection not lost, and not listed down in the switch's latest routing
  // table.  The switch's membership may learn of a dead node before this
  // connection fails (over shared memory a killed peer goes unnoticed until
  // UCX's keepalive), so both count.  kInvalidEndpoint otherwise.
  net::EndpointId LiveEndpoint(uint32_t node) const;

  // The memory node holding `addr` now: the page directory's node for an
  // address of a page (which may have moved to another rack), else the
  // node whose range holds it; nullptr if none.
  MemNode* NodeFor(uint64_t addr);
  const MemNode* NodeFor(uint64_t addr) const { return const_cast<Connections*>(this)->NodeFor(addr); }
  // Where the byte at `addr` is now: its node, its offset in that node's
  // pool, the bytes from it to the end of its page (or of the node's range
  // for an unpaged address), and its page if the directory has it.
  struct Placement {
    MemNode* node = nullptr;
    uint64_t pool_offset = 0;
    uint64_t room = 0;
    std::optional<tier::PageLocation> page;
  };
  std::optional<Placement> Place(uint64_t addr);
  // Asks the switch for its table and waits until a page directory newer
  // than `version` arrives, at most `timeout`: a memory node said a page
  // is moving or moved (Aborted).  Timeout naming the version otherwise
  // (the node may be the one behind: its caller tries again).
  Status AwaitNewerDirectory(uint32_t version, std::chrono::milliseconds timeout);
  // Runs `attempt` (returning a Status or a Result) on the memory node that
  // holds `addr`'s page, again while it answers Aborted (the page is moving
  // or moved): each time after a page directory newer than the one it ran
  // with arrived, or, if none came, a pause that doubles from 1 to 64 ms
  // (the node may be the one behind this client), until rma_timeout() has
  // passed; then its last answer.  Counts page_move_waits.  An address no
  // directory page holds runs once.
  template <typename Attempt>
  auto FollowingPages(uint64_t addr, Attempt&& attempt) -> decltype(attempt());
  // How long a one-sided operation or a control call waits.
  std::chrono::milliseconds rma_timeout() const { return options.request_timeout * options.max_attempts; }

  // Queues a traversal message for memory node endpoint `ep` or the
  // switch; it leaves at the next FlushTraversals().
  void QueueTraversal(net::EndpointId ep, std::vector<uint8_t> bytes, uint64_t request_id);
  // Sends the queued traversal messages, aggregated per destination
  // (protocol/outbox.h).  One whose direct send fails goes to the switch;
  // one the switch cannot take is left to its request's timer.  Called by
  // the event loop before it waits and before it returns.
  void FlushTraversals();

  ClientOptions& options;
  ClientCounters& counters;
  std::unique_ptr<net::Worker> worker;
  std::unique_ptr<Outbox> outbox;  // traversal messages of this turn of the loop
  std::unique_ptr<ControlClient> control;
  net::EndpointId switch_ep = net::kInvalidEndpoint;
  bool switch_down = false;
  uint32_t cpu_node = 0;
  std::vector<MemNode> nodes;  // by node id
  std::chrono::steady_clock::time_point next_switch_attempt{};  // after a failed reconnection
  std::string switch_error;                 // why the last one failed
  std::set<uint32_t> unrouted;              // known nodes the switch did not list
  // How traversals travel, as the switch says (docs/architecture.md 6).
  RoutingMode routing = RoutingMode::kSwitch;
  RoutingTable routing_table;
  // The page table: the switch's page directory, pushed with the routing
  // table (tier/tier_push.h; none without racks).
  tier::PageLocator pages;
};

template <typename Attempt>
auto Connections::FollowingPages(uint64_t addr, Attempt&& attempt) -> decltype(attempt()) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + rma_timeout();
  std::chrono::milliseconds pause{1};
  for (;;) {
    const uint32_t version = pages.version();
    auto answer = attempt();
    if (answer.ok() || !pages.Locate(addr)) return answer;
    Status::Code code;
    if constexpr (std::is_same_v<decltype(answer), Status>) {
      code = answer.code();
    } else {
      code = answer.status().code();
    }
    if (code != Status::Code::kAborted) return answer;
    ++counters.page_move_waits;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return answer;
    if (!AwaitNewerDirectory(version, std::min(left, pause)).ok())
      pause = std::min(pause * 2, std::chrono::milliseconds(64));
  }
}

}  // namespace pulse
