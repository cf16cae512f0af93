// Services a memory node hosts without knowing them: the registry through
// which a higher layer (the RPC baselines of src/rpc, say) adds a
// request/answer service on an active-message id of its own.  The server
// layer never includes the code it runs; the program that starts the node
// (`pulse memnode`, which links every layer) fills
// MemNodeServerOptions::extensions before Create().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/memory.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::memnode {

// How a hosted service checks a request's claimed tenant: OK, or the
// refusal to answer with (the node asks node::CheckTenantClaim).
using TenantCheck = std::function<Status(TenantId claimed)>;

// What the node lends an extension: its range table (the extension reads
// far memory only through it, with each caller's tenant) and its far span
// [span_base, span_base + span_size).  The table outlives the extension.
// Services that talk on their own (the chain-replicated transactions of
// src/tx forward to other memory nodes and answer later) also get the
// node's Worker (to send on it, from the node's thread only), its id, a
// connection to another memory node (`peer`: Unavailable if the switch
// lists it dead or it cannot be reached; never from inside a handler), and
// whether the pool was re-attached after a crash (valid from the first
// Poll on).
struct ExtensionContext {
  const RangeTable* table = nullptr;
  uint64_t span_base = 0;
  uint64_t span_size = 0;
  net::Worker* worker = nullptr;
  uint32_t node = 0;
  std::function<Result<net::EndpointId>(uint32_t node)> peer;
  std::function<bool()> pool_reattached;
};

// One service.  Its calls all come from the node's network thread, so it
// need not be thread-safe.
class MemNodeExtension {
 public:
  virtual ~MemNodeExtension() = default;

  // The active-message ids it answers on: a message `request_am()` from any
  // connection, or a ring entry framed for `request_am()` (another memory
  // node forwarding by a one-sided write, extension_entry.h), is passed to
  // HandleFrom, whose answer goes back as a message `reply_am()`.
  virtual uint16_t request_am() const = 0;
  virtual uint16_t reply_am() const = 0;
  // The answer to one request, or nullopt to drop it (too malformed to
  // answer).  `authorize` says whether the connection the request came on
  // may act for the tenant the request claims (node::CheckTenantClaim);
  // a refused request is answered with the refusal, touching nothing.
  virtual std::optional<std::vector<uint8_t>> Handle(std::span<const uint8_t> payload,
                                                     const TenantCheck& authorize) = 0;
  // As Handle, knowing the connection (`from`) it came on; what the node
  // calls.  An extension that answers later (or on another connection)
  // returns nullopt here and sends on ExtensionContext::worker itself.
  virtual std::optional<std::vector<uint8_t>> HandleFrom(net::EndpointId from, std::span<const uint8_t> payload,
                                                         const TenantCheck& authorize) {
    return Handle(payload, authorize);
  }
  // Called by the node's loop before it waits for the network (and once
  // per pass while the engine is busy), outside every handler: work the
  // handlers queued.  True if work remains (the node then does not sleep).
  virtual bool Poll() { return false; }
  // Connection `ep` closed or failed.
  virtual void OnDisconnect(net::EndpointId ep) {}

  // Fields it adds to the node's "hello" answer (include/pulse/cluster.h).
  virtual void AddHelloFields(nlohmann::json* reply) const {}
  // Its counters under "stats": key and object.
  virtual std::string stats_key() const = 0;
  virtual nlohmann::json Stats() const = 0;
  // A line for the node's log at start (empty: none).
  virtual std::string StartupLine() const { return {}; }
};

// Builds an extension for one node; called once, from MemNodeServer's
// constructor.
using MemNodeExtensionFactory = std::function<std::unique_ptr<MemNodeExtension>(const ExtensionContext&)>;

}  // namespace pulse::memnode
