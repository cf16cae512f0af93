// The client sessions of a memory node: which connections keep which
// session alive, which allocations each session owns, and when a session
// whose connections are all gone expires (its lease: `grace` after the last
// one closed).  A session's memory is reclaimed when it ends (the client
// says so, "end_session") or expires (the client was killed, or lost every
// connection for longer than the grace).  A connection that is alive is the
// lease: renewing it costs nothing (UCX reports a dead peer, and the node
// then starts the grace).  Sessions recovered from the allocation journal of
// a restarted node start without connections: their clients have the
// (longer) restored grace to reconnect, since a client learns of the restart
// only when it next touches the node (any request naming the session binds
// it again).
//
// Sessions are scoped by tenant: binding a session of another tenant is
// refused.  Not thread-safe: the memory node's thread uses it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "pulse/memory.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::memnode {

class SessionTable {
 public:
  using Clock = std::chrono::steady_clock;

  SessionTable(std::chrono::milliseconds grace, std::chrono::milliseconds restored_grace)
      : grace_(grace), restored_grace_(restored_grace) {}

  // The session of requests from `ep` that name none: one per connection,
  // with a random id, ending with it (after the grace).
  uint64_t ConnectionSession(net::EndpointId ep, TenantId tenant);
  // Binds `ep` to session `id` of `tenant`, creating the session if it is
  // new.  InvalidArgument for id 0; PermissionDenied if `id` belongs to
  // another tenant.
  Status Bind(uint64_t id, TenantId tenant, net::EndpointId ep);
  // A session found in the journal of a restarted node: no connection; it
  // expires `restored_grace` after `now` unless bound again.
  void Restore(uint64_t id, TenantId tenant, Clock::time_point now);

  void AddAllocation(uint64_t id, uint64_t offset);
  void RemoveAllocation(uint64_t id, uint64_t offset);

  // Connection `ep` is gone: sessions left without a connection expire
  // `grace` after `now` (at once if they own nothing).
  void Detach(net::EndpointId ep, Clock::time_point now);
  // Removes every session whose grace has passed; returns their
  // allocations (pool offsets) to reclaim.
  std::vector<uint64_t> TakeExpired(Clock::time_point now);
  // Removes session `id` of `tenant` now and returns its allocations.
  // NotFound if there is none; PermissionDenied if it is another tenant's.
  Result<std::vector<uint64_t>> Take(uint64_t id, TenantId tenant);
  // Removes every session of `tenant`; returns their allocations.
  std::vector<uint64_t> TakeTenant(TenantId tenant);

  // When the next session expires, if one is waiting to.
  std::optional<Clock::time_point> NextExpiry() const;
  size_t size() const { return sessions_.size(); }
  std::chrono::milliseconds grace() const { return grace_; }
  uint64_t expired() const { return expired_; }

 private:
  struct Session {
    TenantId tenant = 0;
    std::set<net::EndpointId> connections;
    std::set<uint64_t> allocations;  // pool offsets
    std::optional<Clock::time_point> expires;  // set while it has no connection
  };
  std::vector<uint64_t> Remove(std::map<uint64_t, Session>::iterator it);

  std::chrono::milliseconds grace_;
  std::chrono::milliseconds restored_grace_;
  std::map<uint64_t, Session> sessions_;
  std::map<net::EndpointId, std::set<uint64_t>> by_connection_;
  std::map<net::EndpointId, uint64_t> connection_session_;  // ConnectionSession's ids
  std::mt19937_64 random_{std::random_device{}()};
  uint64_t expired_ = 0;
};

}  // namespace pulse::memnode
