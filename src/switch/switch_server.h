// `pulse switch`: the rack's switch as a process (seed 000 section 5).
//
// Memory nodes and CPU nodes connect to it; it holds only the base range ->
// memory node map (Router) plus the endpoint of every node, and moves
// traversal messages:
//   a request from a CPU node        -> the memory node owning cur_ptr
//   a "not local" response           -> the owner of the new cur_ptr (the
//                                       continuation, scratch pad intact)
//   any other response               -> the CPU node named in the message
//   a pointer no node owns           -> kFaultInvalidPointer to the CPU node
//   the owner is down (or never came) -> kNodeUnavailable to the CPU node,
//                                       state intact so it can be re-issued
// A request's cpu_node is set from the connection it came on, so responses
// always return to the CPU node that asked.
//
// RPC baseline messages routed through the switch (include/pulse/rpc.h,
// RpcPath::kSwitch) are forwarded plainly, with no continuation logic: a
// request (kAmRpcRequest) to the memory node owning its start pointer, its
// CPU-node id bits set from the connection it came on; a reply
// (kAmRpcReply) from a memory node to the CPU node its request id names.
// A pointer no node owns / a dead owner is answered kFaultInvalidPointer /
// kNodeUnavailable.  They have their own counters (rpc_*): `forwards`
// counts only continuations between memory nodes.  Malformed messages are counted
// and dropped.  Control operations (include/pulse/cluster.h):
// register_memnode, hello, stats, shutdown.
//
// Faults: a memory node that disconnects is marked dead; its range stays in
// the map so that requests for it get kNodeUnavailable until a node with the
// same id registers again (which replaces it).  A CPU node that disconnects
// is forgotten; responses still arriving for it are counted and dropped.
//
// Control plane: the switch owns the routing table (protocol/routing_table.h;
// its version grows on every registration and death) and pushes it
// (kAmRouting) to every connected CPU node and memory node on each change;
// hello and register_memnode answers carry it too, with the cluster's
// routing mode (options.routing).  With racks, the table carries the page
// directory the switch owns (switch/directory_host.h), and the router
// follows it.  Under direct routing traversal messages
// reach the switch only as fall-backs (a redirect, a CPU node a memory node
// has no connection to); they are routed as above.
//
// Aggregation: kAmBatch envelopes (include/pulse/message_batch.h) are
// unpacked and each inner message routed as if it came alone (a malformed
// envelope is counted and dropped whole); what one network pass routes to
// one destination leaves in as few messages as options.batching allows
// (protocol/outbox.h).  A memory node found down when its messages are sent
// is marked dead and they are answered kNodeUnavailable, as above.
//
// Threading: one thread calls Start() and Run(); RequestStop() may be called
// from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "node/node_log.h"
#include "protocol/outbox.h"
#include "protocol/routing_table.h"
#include "pulse/net.h"
#include "switch/directory_host.h"
#include "switch/swap_driver.h"
#include "switch/router.h"
#include "switch/swap_intake.h"
#include "pulse/tier/page_address.h"

namespace pulse::switchd {

struct SwitchServerOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 7100;
  net::WorkerOptions worker;
  uint32_t max_scratch_bytes = 64 * 1024;  // larger messages are malformed
  // Returned as "instance" in `stats`: the launcher tells its process from
  // another one answering on the same address (src/cluster/launcher.h).
  std::string instance_id;
  // How the cluster routes traversals; told to every node that joins.
  RoutingMode routing = RoutingMode::kDirect;
  // Message aggregation of forwarded traversal messages ($PULSE_BATCH
  // overrides it).
  BatchLimits batching;
  // The page size of the page directory it holds once memory nodes register
  // with a rack (switch/directory_host.h, docs/tier.md).
  uint64_t page_bytes = tier::kDefaultPageSize;
  // Run hot-page swaps (switch/swap_driver.h); off: requests stay queued.
  bool swaps = false;
  // Longest wait for one memory node's answer during a swap.
  std::chrono::milliseconds swap_timeout{5000};
};

struct SwitchCounters {
  uint64_t malformed = 0;          // traversal messages that did not decode
  uint64_t node_unavailable = 0;   // answered kNodeUnavailable
  uint64_t responses_dropped = 0;  // for a CPU node that is gone
  uint64_t messages_in = 0;        // traversal messages
  uint64_t bytes_in = 0;  // (out: the outbox's counters)
  uint64_t control_ops = 0;
  uint64_t control_errors = 0;
  uint64_t rpc_requests = 0;          // RPC requests forwarded to a memory node
  uint64_t rpc_replies = 0;           // RPC replies forwarded to a CPU node
  uint64_t rpc_answered = 0;          // answered here: no owner, or the owner is down
  uint64_t rpc_dropped = 0;           // malformed, or for a CPU node that is gone
  uint64_t rpc_bytes = 0;             // of the forwarded messages
  uint64_t routing_pushes = 0;        // routing tables pushed (one per receiver)
  uint64_t table_requests = 0;        // tables asked for by CPU nodes a redirect found stale
  InboundBatches batches_in;          // kAmBatch envelopes received
};

class SwitchServer {
 public:
  // Creates the UCX worker and installs the handlers; no network yet.
  static Result<std::unique_ptr<SwitchServer>> Create(const SwitchServerOptions& options,
                                                      const node::NodeLog* log);
  ~SwitchServer();
  SwitchServer(const SwitchServer&) = delete;
  SwitchServer& operator=(const SwitchServer&) = delete;

  // Listens.  Errors: bad host, address in use.
  Status Start();
  // Serves until a shutdown operation or RequestStop().
  Status Run();
  // Makes Run() return soon.  Thread-safe.
  void RequestStop();

  uint16_t port() const { return port_; }

 private:
  struct MemNode {
    uint32_t node = 0;
    std::string address;
    uint64_t base = 0;
    uint64_t size = 0;
    net::EndpointId ep = net::kInvalidEndpoint;  // kInvalidEndpoint: dead
  };

  SwitchServer(const SwitchServerOptions& options, const node::NodeLog* log,
               std::unique_ptr<net::Worker> worker, DirectoryHost directory);
  bool stopping() const { return stop_.load(std::memory_order_acquire); }

  void OnControl(net::EndpointId from, std::span<const uint8_t> payload);
  void OnTraversal(net::EndpointId from, std::span<const uint8_t> payload);
  // A kAmBatch envelope: each inner message handled as OnTraversal would.
  void OnBatch(net::EndpointId from, std::span<const uint8_t> payload);
  void OnDisconnect(net::EndpointId ep, const Status& why);
  void OnRpcRequest(net::EndpointId from, std::span<const uint8_t> payload);
  void OnRpcReply(net::EndpointId from, std::span<const uint8_t> payload);

  Result<nlohmann::json> RegisterMemNode(net::EndpointId from, const nlohmann::json& body);
  // A registering node's frames join the page directory (if it names a
  // rack); DirectoryHost::Register's errors.
  Status JoinDirectory(uint32_t node, const std::string& rack, uint64_t pool_bytes);
  nlohmann::json Hello(net::EndpointId from);
  nlohmann::json Stats() const;
  // stats' "aggregation": the outbox and the envelopes received.
  nlohmann::json AggregationJson() const;
  nlohmann::json MemNodeList() const;

  // The CPU node id of `ep`, assigned on first use.
  uint32_t CpuNodeOf(net::EndpointId ep);
  // Queues for the memory node; false if it is down.
  bool SendToMemNode(MemNode* node, const TraversalMessage& message);
  void SendToCpuNode(uint32_t cpu_node, const TraversalMessage& message);
  // Answers `message` kNodeUnavailable to its CPU node (its owner is down).
  void AnswerUnavailable(TraversalMessage message, NodeId node);
  // Sends what this network pass routed (out_), aggregated per destination.
  void Flush();
  void MarkDead(MemNode* node, const std::string& why);
  // The routing table's JSON with the page directory (the "tier" member)
  // when the cluster has racks: what pushes and answers carry.
  nlohmann::json RoutingPayload() const;
  // The routing table and mode, as hello and register_memnode answer them.
  void AddRouting(nlohmann::json* answer) const;
  // Sends the routing table to every connected memory node and CPU node.
  void PushRouting();
  // Sends `table` (RoutingPayload's text) to `ep` as a kAmRouting push.
  void SendRouting(net::EndpointId ep, const std::string& table);
  // Tells the swap driver the directory and the live memory nodes.
  void UpdateSwapView();
  // Applies a swap the driver committed and takes its finished requests.
  void ServeSwaps();

  SwitchServerOptions options_;
  const node::NodeLog* log_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<net::Worker> worker_;
  std::unique_ptr<SwapDriver> driver_;  // with options.swaps; stopped before the worker goes
  uint16_t port_ = 0;
  Router router_;
  RoutingTable routing_;
  DirectoryHost directory_;
  SwapIntake swaps_{&directory_};  // CPU nodes' swap requests (docs/tier.md)
  std::map<uint32_t, MemNode> memnodes_;                      // by node id
  std::unordered_map<net::EndpointId, uint32_t> memnode_of_;  // live endpoints
  std::unordered_map<uint32_t, net::EndpointId> cpu_eps_;     // by CPU node id
  std::unordered_map<net::EndpointId, uint32_t> cpu_of_;
  uint32_t next_cpu_node_ = 1;
  SwitchCounters counters_;
  Outbox out_;  // traversal messages routed in this network pass
};

}  // namespace pulse::switchd
