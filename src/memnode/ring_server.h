// RingServer: the memory node's ring request path (issue 15; docs/ring.md):
// a RingHost (src/net/ring_host.h) whose entries are traversal messages in
// the same encoding as kAmTraversal, handed to the same MemNodeService, so
// programs by hash, the program-cache protocol ("unknown program", then the
// code) and the duplicate filter are those of the message path.
//
// What the service emits for a request that came by ring goes back into
// that request's slot (Route), except a "not local" continuation, which
// goes to the switch as before (the switch routes it on, and the final
// answer reaches the CPU node through the switch); its slot is freed with
// an empty answer.  A request whose entry does not decode is answered
// with InvalidArgument in its slot.  Requests act for the connection's
// proven tenant (node::TenantOf), whatever the message claims.
//
// An entry framed for a hosted service (extension_entry.h: another memory
// node's chain replica forwarding a transaction) goes to `to_service`
// instead of the engine, and its slot is answered at once with the
// hand-over's status and no payload.
//
// Thread-safety: none; the memory node's thread drives it, inside the
// Worker's progress and MemNodeServer::Run.  Destroy it before the Worker.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "memnode/service.h"
#include "net/ring_host.h"
#include "node/node_tenant.h"
#include "pulse/net.h"
#include "pulse/protocol.h"

namespace pulse::memnode {

class RingServer {
 public:
  // Hands a service's entry over: OK if a service on `am` took `message`
  // (which it answers by message, if at all); else the refusal that goes
  // into the entry's slot (NotFound: no service on `am`).
  using ServiceEntryFn =
      std::function<Status(net::EndpointId from, uint16_t am, std::span<const uint8_t> message)>;

  // `worker`, `service` and `send` (the node's way to the switch, which
  // must call Route first) must outlive the RingServer.  `to_service` may
  // be empty (service entries are then refused with NotFound).
  static Result<std::unique_ptr<RingServer>> Create(net::Worker* worker, const net::ring::RingHostOptions& options,
                                                    uint32_t max_scratch_bytes, MemNodeService* service,
                                                    const MemNodeService::SendFn* send, ServiceEntryFn to_service = {});

  // A message the service emits: true if it answered a ring request in its
  // slot (send nothing more; its scratch pad may have been taken for reuse,
  // so `m` is done with), false if it goes to the switch (`m` untouched).
  bool Route(TraversalMessage& m);

  // Takes ring entries (and rings doorbells); the number taken.
  size_t Poll();
  // Whether the node may sleep (see RingHost::MaySleep).
  bool MaySleep() { return host_->MaySleep(); }
  // When the last entry was taken (RingHost::last_entry).
  net::Clock::time_point last_entry() const { return host_->last_entry(); }
  // Connection `ep` ended: its ring and its requests are dropped.
  void Close(net::EndpointId ep);
  // Counters for `stats`: rings (and how many of them UCX's own one-sided
  // puts reach, the rest pulse's messages), each ring's connection
  // (`by_connection`: layout, how answers travel, and the CPU node
  // `cpu_node_of` names for it, if any), entries, malformed, ...
  nlohmann::json Stats(const net::Worker& worker,
                       const std::function<std::optional<uint32_t>(net::EndpointId)>& cpu_node_of) const;

 private:
  struct Slot {
    uint32_t ring = 0;
    uint64_t seq = 0;
  };
  RingServer(uint32_t max_scratch_bytes, MemNodeService* service, const MemNodeService::SendFn* send,
             ServiceEntryFn to_service)
      : max_scratch_bytes_(max_scratch_bytes), service_(service), send_(send), to_service_(std::move(to_service)) {}
  void OnEntry(net::Worker& worker, const net::ring::RingHost::Request& r);
  void OnServiceEntry(const net::ring::RingHost::Request& r);

  std::unique_ptr<net::ring::RingHost> host_;
  uint32_t max_scratch_bytes_;
  MemNodeService* service_;
  const MemNodeService::SendFn* send_;
  ServiceEntryFn to_service_;
  std::unordered_map<uint64_t, Slot> slots_;  // ring requests in the service, by request id
  std::vector<uint8_t> answer_;  // Route's encoded answer (kept for its capacity)
  // Recycled from answered requests for the next entries (no allocation
  // per entry: with 64 requests in flight the allocator's per-thread
  // caches overflow, and malloc and free were ~10% of the node's CPU per
  // ring GET), at most kMaxSpares of each.
  static constexpr size_t kMaxSpares = 1024;
  std::vector<std::vector<uint8_t>> spare_scratch_;
  std::vector<std::unordered_map<uint64_t, Slot>::node_type> spare_slots_;
  // Inside Poll() only: the tenant of the connection whose entry came last
  // (one lookup per ring and scan, not per entry; a connection's tenant
  // cannot change while entries are taken, no message is handled then).
  bool in_poll_ = false;
  net::EndpointId tenant_ep_ = net::kInvalidEndpoint;
  Result<node::ConnectionTenant> tenant_ = Status::NotFound("no connection yet");
  uint64_t decode_errors_ = 0;
  uint64_t service_entries_ = 0;  // handed to a hosted service
  uint64_t service_refused_ = 0;  // taken apart but refused by the node (no such service, ...)
  uint64_t forwarded_ = 0;   // "not local" continuations sent to the switch
  uint64_t superseded_ = 0;  // a re-sent request took the place of its earlier entry
};

}  // namespace pulse::memnode
