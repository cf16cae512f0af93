// The RPC baseline (seed 000 section 6, seed 001 section 7): a pointer
// traversal as a native C++ handler on the memory node's CPU, run to
// completion per request.  When the next pointer belongs to another memory
// node the reply returns to the CPU node, which re-issues the call to the
// owner (there is no switch continuation).  With `wimpy` the memory node
// stretches the handler to emulate a ~1 GHz SmartNIC core (`rpc-wimpy`; how:
// src/rpc/core_clock.h).
//
// A call names a handler (RpcHandlerId), a start pointer and a fixed-size
// state (argument in, answer out; the handler's own layout).  The memory
// node checks every far access against its range table with the calling
// client's tenant, exactly as for pulse traversals: another tenant's data is
// a kFaultProtection.  Calls go over the Client's fabric either straight to
// the memory node that owns the pointer (RpcPath::kDirect: CPU node ->
// memory node -> CPU node) or through the switch process (RpcPath::kSwitch:
// CPU node -> switch -> memory node -> switch -> CPU node, as every packet
// crosses the ToR switch in a rack; the switch only forwards, by the start
// pointer, and answers kNodeUnavailable / kFaultInvalidPointer itself when
// the owner is down / there is none).  docs/rpc.md compares the two.
// Typed calls for pulse::ds structures: include/pulse/rpc_ds.h.
//
// Handlers live in the memory node (src/rpc/rpc_handler.h says how to add
// one).  Ids 1-15 are the pulse::ds handlers below; applications use 16 up.
//
// Thread-safety: an RpcClient is not thread-safe and shares its Client's
// thread.  One RpcClient per Client at a time (it installs the reply
// handler on the Client's fabric, and its timers and callbacks in the
// Client's wait loop).  Asynchronous calls complete
// inside Poll(), WaitAll() or a synchronous Call() of this RpcClient or of
// its Client (e.g. while a Traverse() waits), never inside a fabric handler.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "pulse/client.h"
#include "pulse/status.h"
#include "pulse/traversal.h"

namespace pulse {

// How requests and replies travel (see above).
enum class RpcPath { kDirect, kSwitch };

enum RpcHandlerId : uint16_t {
  kRpcUmapFind = 1,          // ds::UnorderedMap chain walk
  kRpcBTreeLowerBound = 2,   // ds::BTree first entry >= key
  kRpcBTreeAggregate = 3,    // ds::BTree sum/min/max/count over [lo, hi]
  kRpcBTreeScan = 4,         // ds::BTree entries in [lo, hi] (output)
  kRpcListFind = 5,          // ds::List first node holding a value
  kRpcListAggregate = 6,     // ds::List sum/min/max/count over [lo, hi]
  // Applications (src/rpc/handlers/app_handlers.cc; states in
  // src/rpc/handlers/rpc_states.h).
  kRpcWtScan = 16,           // apps::WiredTiger scan: (key, value checksum) records
  kRpcTsvAggregate = 17,     // apps::TsvTree sum/min/max/count over [lo, hi]
  kRpcKvGet = 18,            // kv::Store GET (src/rpc/handlers/kv_get.cc; state: src/kv/iterators/kv_layout.h)
  // kv::Store PUT and DELETE (src/rpc/handlers/kv_put.cc, kv_delete.cc):
  // they write, so a client must not retransmit them (max_attempts = 1).
  kRpcKvPut = 19,
  kRpcKvDelete = 20,
  // RDMA-optimised RPC (seed 004 section 5.5): a kv::Store GET whose item
  // names an object; small payloads inline, large ones by address
  // (src/rpc/handlers/kv_get_object.cc; client: include/pulse/rpc_rrpc.h).
  kRpcKvGetObject = 21,
};

struct RpcOptions {
  // An attempt that gets no reply in this time is sent again, up to
  // max_attempts in all; then the call fails with Status::Timeout.
  std::chrono::milliseconds request_timeout{500};
  uint32_t max_attempts = 4;
  // Re-issues (node boundaries and step limits) one call may make before it
  // fails with a kFaultInvalidPointer result: a guard against cycles.
  uint32_t max_reissues = 4096;
  bool wimpy = false;  // run every call on the emulated wimpy core
  // The wimpy core's clock (GHz, at most 65.535, MHz resolution), carried
  // in each wimpy request; 0: the memory node's --rpc-core-ghz.
  double core_ghz = 0;
  RpcPath path = RpcPath::kDirect;
};

struct RpcCallOptions {
  std::optional<bool> wimpy;  // overrides RpcOptions::wimpy
};

struct RpcResult {
  // kDone, or the fault that ended the call (kFaultProtection, kFaultBounds,
  // kFaultInvalidPointer for a pointer no memory node owns).
  TraversalStatus status = TraversalStatus::kDone;
  std::vector<uint8_t> state;    // the handler's final state: the answer
  std::vector<uint8_t> output;   // output of all legs, concatenated
  uint64_t next_ptr = 0;         // where a faulting call stopped
  uint64_t fault_addr = 0;
  uint32_t issues = 0;           // requests sent (re-issues included)
  uint32_t node_crossings = 0;   // re-issues to another memory node
  uint32_t retransmissions = 0;
  uint32_t steps = 0;            // far objects the handlers read
  uint64_t node_ns = 0;          // handler time on the memory nodes (slowdown included)
};

struct RpcCounters {
  uint64_t calls = 0;
  uint64_t requests_sent = 0;
  uint64_t node_crossings = 0;  // re-issues at node boundaries
  uint64_t continues = 0;       // re-issues after a node's step limit
  uint64_t retransmissions = 0;
  uint64_t timeouts = 0;
  uint64_t stale_replies = 0;   // replies to requests no longer pending
  uint64_t bad_replies = 0;     // replies that did not decode
};

class RpcClient {
 public:
  using Callback = std::function<void(Result<RpcResult>)>;

  // Installs the reply handler on client's fabric.  `client` must outlive
  // the RpcClient.  Errors: InvalidArgument (no client).
  static Result<std::unique_ptr<RpcClient>> Create(Client* client, const RpcOptions& options = {});
  // Also hooks its timers and callbacks into the Client's wait loop.
  // Removes the reply handler; pending calls are dropped without callbacks.
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Calls `handler` from `start` with `state` and waits for the answer,
  // following node boundaries.  The Status is non-OK when the call could not
  // be made or answered: InvalidArgument (the memory node rejected the
  // request: unknown handler, wrong state size; its message is included),
  // Timeout (no reply after the retry budget), Unavailable (the memory node
  // is down, or the switch says so, or, on RpcPath::kSwitch, the switch is
  // lost).  Faults of the traversal itself are in the result's status.
  Result<RpcResult> Call(uint16_t handler, uint64_t start, std::span<const uint8_t> state,
                         const RpcCallOptions& options = {});
  // Starts a call; `done` runs inside a later Poll/WaitAll/Call.
  void CallAsync(uint16_t handler, uint64_t start, std::span<const uint8_t> state, const RpcCallOptions& options,
                 Callback done);
  // Makes progress without blocking; handles timeouts.
  void Poll();
  // Drives the fabric until no call is pending; Timeout after `timeout`.
  Status WaitAll(std::chrono::milliseconds timeout);
  size_t pending() const;

  const RpcCounters& counters() const;
  Client* client() const;

  struct Impl;

 private:
  explicit RpcClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pulse
