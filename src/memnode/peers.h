// Where a memory node sends traversal messages under direct routing
// (docs/architecture.md section 6), other than back to the switch:
//   - the other memory nodes, for "not local" continuations: connections
//     to the address the routing table gives, with the node's own
//     credentials, so the worker's handshake proves both ends hold the
//     cluster secret (a peer that cannot prove it is refused).  The traversal
//     path only takes a connection that exists (Connected); one it lacks is
//     noted as wanted and opened by ConnectWanted, which the node's event
//     loop calls outside any network handler and engine pass, and so does
//     every peer of a routing table that arrives (issue 14: a connect inside
//     the engine's pass stalled every traversal on the node for the
//     handshake, and one inside a handler could not be made at all);
//   - the CPU nodes, for final responses: the connections whose hello named
//     the CPU node id (include/pulse/cluster.h), and of those only one that
//     proved the response's tenant (or the cluster secret).  An id is bound
//     to the first identity (tenant, or cluster) that names it: a later
//     connection of another identity naming it is not bound, so a tenant
//     cannot draw another's answers to itself or send its own to them (the
//     node also answers a tenant connection's requests to the CPU node that
//     connection named, whatever the request claims).
// A caller that gets no endpoint falls back to the switch.
//
// Not thread-safe: the memory node's network thread uses it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "protocol/routing_table.h"
#include "pulse/memory.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::memnode {

class Peers {
 public:
  // `worker` must outlive this.  A connection attempt to a memory node
  // waits at most `connect_timeout`; after a failed one that node is not
  // tried again for `retry_after`.
  Peers(net::Worker* worker, std::chrono::milliseconds connect_timeout, std::chrono::milliseconds retry_after);

  // A connection to memory node `e` (its address may have changed since
  // the last one: a restarted node).  Unavailable if it is not alive, was
  // unreachable less than retry_after ago, or cannot be reached now (also
  // from inside a network handler, where the worker cannot connect).
  // `e` is taken by value: connecting runs the worker's handlers, and the
  // routing-table push among them replaces the table the caller found `e`
  // in (issue 14: a reference into it was read after it was freed).
  Result<net::EndpointId> MemNode(RouteEntry e);

  // The open connection to memory node `e` at its current address, without
  // connecting: Unavailable if there is none (or `e` is down), and then `e`
  // is wanted (ConnectWanted opens it).  For the traversal path.
  Result<net::EndpointId> Connected(const RouteEntry& e);
  // Notes `e` as wanted unless a connection to it is open.
  void Want(const RouteEntry& e);
  bool has_wanted() const { return !wanted_.empty(); }
  // Connects to every wanted node (MemNode: each attempt waits at most
  // connect_timeout, a node unreachable less than retry_after ago is
  // skipped) and forgets the wishes.  Not from a network handler.  Returns
  // the nodes a new connection was opened to: a node behind a new connection
  // may be a new incarnation that knows none of the programs sent to the
  // old one.
  std::vector<NodeId> ConnectWanted();

  // Connection `ep` said in its hello that it is CPU node `cpu_node`.
  // False (not bound) if a live connection of another identity holds it.
  bool BindCpuNode(uint32_t cpu_node, net::EndpointId ep);
  // The CPU node `ep` is bound to, if any.
  std::optional<uint32_t> CpuNodeOf(net::EndpointId ep) const;
  // A live connection of CPU node `cpu_node` that may receive `tenant`'s
  // answers; kInvalidEndpoint if there is none.
  net::EndpointId CpuNode(uint32_t cpu_node, TenantId tenant) const;

  // Forgets `ep` (closed or failed).  Returns the memory node it was the
  // connection to, if it was one.
  std::optional<NodeId> OnDisconnect(net::EndpointId ep);

  size_t memnode_connections() const { return memnodes_.size(); }

 private:
  struct PeerLink {
    std::string address;
    net::EndpointId ep = net::kInvalidEndpoint;
  };
  net::Worker* worker_;
  std::chrono::milliseconds connect_timeout_;
  std::chrono::milliseconds retry_after_;
  std::map<NodeId, PeerLink> memnodes_;
  std::map<NodeId, std::chrono::steady_clock::time_point> unreachable_until_;
  std::map<NodeId, RouteEntry> wanted_;
  std::map<uint32_t, std::vector<net::EndpointId>> cpu_nodes_;
};

}  // namespace pulse::memnode
