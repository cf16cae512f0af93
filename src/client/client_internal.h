// What layers above the client (pulse::RpcClient in src/rpc) reach of a
// Client beyond its public API: its fabric, the endpoints its messages go
// to, and its event loop, so that such a layer carries its own messages
// over the same Worker and one wait loop serves both (it registers an
// EventSource with loop()).  Not installed; not for applications.
#pragma once

#include <cstdint>

#include "client/event_loop.h"
#include "pulse/client.h"
#include "pulse/net.h"

namespace pulse {

struct ClientInternal {
  // The Worker the client drives (handlers installed on it run inside the
  // client's calls).
  static net::Worker& worker(Client& client);
  // The direct endpoint of memory node `node` (kInvalidEndpoint if unknown,
  // its connection lost, or the switch lists it down:
  // Connections::LiveEndpoint).
  static net::EndpointId memnode_endpoint(const Client& client, uint32_t node);
  // The switch's endpoint (kInvalidEndpoint while it is lost).
  static net::EndpointId switch_endpoint(const Client& client);
  // The loop every wait of this client runs.
  static EventLoop& loop(Client& client);
  // Writes this client made into memory nodes' rings mapped into its
  // address space, as plain stores (one host: entries, tails, wait words;
  // RingSender::ring_stores): one-sided operations that
  // Client::net_counters().rma_ops does not count.  Only grows.
  static uint64_t ring_stores(const Client& client);
  // The version of the routing table this client holds (0: none yet).
  static uint32_t routing_version(const Client& client);
};

}  // namespace pulse
