#include "memnode/peers.h"

#include <algorithm>

#include <fmt/format.h>

#include "node/node_tenant.h"
#include "protocol/control_client.h"

namespace pulse::memnode {

using Clock = std::chrono::steady_clock;

Peers::Peers(net::Worker* worker, std::chrono::milliseconds connect_timeout, std::chrono::milliseconds retry_after)
    : worker_(worker), connect_timeout_(connect_timeout), retry_after_(retry_after) {}

Result<net::EndpointId> Peers::MemNode(RouteEntry e) {
  if (!e.alive) return Status::Unavailable(fmt::format("memory node {} is down", e.node));
  auto it = memnodes_.find(e.node);
  if (it != memnodes_.end()) {
    if (it->second.address == e.address && worker_->IsConnected(it->second.ep)) return it->second.ep;
    (void)worker_->Close(it->second.ep, std::chrono::milliseconds(0));  // an old incarnation
    memnodes_.erase(it);
  }
  if (auto until = unreachable_until_.find(e.node); until != unreachable_until_.end()) {
    if (Clock::now() < until->second)
      return Status::Unavailable(fmt::format("memory node {} at {} was unreachable just now", e.node, e.address));
    unreachable_until_.erase(until);
  }
  Result<std::pair<std::string, uint16_t>> hp = ParseAddress(e.address);
  if (!hp.ok()) return hp.status();
  Result<net::EndpointId> ep = worker_->Connect(hp->first, hp->second, connect_timeout_);
  if (!ep.ok()) {
    // Inside a handler the worker cannot connect (InvalidArgument): that
    // says nothing about the peer.
    if (ep.status().code() != Status::Code::kInvalidArgument) unreachable_until_[e.node] = Clock::now() + retry_after_;
    return Status::Unavailable(
        fmt::format("memory node {} at {}: {}", e.node, e.address, ep.status().message()));
  }
  memnodes_[e.node] = PeerLink{e.address, *ep};
  return *ep;
}

Result<net::EndpointId> Peers::Connected(const RouteEntry& e) {
  if (!e.alive) return Status::Unavailable(fmt::format("memory node {} is down", e.node));
  auto it = memnodes_.find(e.node);
  if (it != memnodes_.end() && it->second.address == e.address && worker_->IsConnected(it->second.ep))
    return it->second.ep;
  wanted_[e.node] = e;
  return Status::Unavailable(fmt::format("no connection to memory node {} at {} yet", e.node, e.address));
}

void Peers::Want(const RouteEntry& e) { (void)Connected(e); }

std::vector<NodeId> Peers::ConnectWanted() {
  std::vector<NodeId> opened;
  // Connecting runs the worker's handlers, which may want more: take the
  // list first.
  std::map<NodeId, RouteEntry> wanted;
  wanted.swap(wanted_);
  for (auto& [node, e] : wanted) {
    auto it = memnodes_.find(node);
    const net::EndpointId before = it == memnodes_.end() ? net::kInvalidEndpoint : it->second.ep;
    Result<net::EndpointId> ep = MemNode(std::move(e));
    if (ep.ok() && *ep != before) opened.push_back(node);
  }
  return opened;
}

bool Peers::BindCpuNode(uint32_t cpu_node, net::EndpointId ep) {
  Result<node::ConnectionTenant> who = node::TenantOf(*worker_, ep);
  if (!who.ok()) return false;
  std::vector<net::EndpointId>& eps = cpu_nodes_[cpu_node];
  for (net::EndpointId other : eps) {
    if (other == ep) return true;
    if (!worker_->IsConnected(other)) continue;
    Result<node::ConnectionTenant> held = node::TenantOf(*worker_, other);
    if (held.ok() && (held->any != who->any || held->tenant != who->tenant)) return false;
  }
  eps.push_back(ep);
  return true;
}

std::optional<uint32_t> Peers::CpuNodeOf(net::EndpointId ep) const {
  for (const auto& [cpu, eps] : cpu_nodes_)
    if (std::find(eps.begin(), eps.end(), ep) != eps.end()) return cpu;
  return std::nullopt;
}

net::EndpointId Peers::CpuNode(uint32_t cpu_node, TenantId tenant) const {
  auto it = cpu_nodes_.find(cpu_node);
  if (it == cpu_nodes_.end()) return net::kInvalidEndpoint;
  for (net::EndpointId ep : it->second) {
    if (!worker_->IsConnected(ep)) continue;
    Result<node::ConnectionTenant> who = node::TenantOf(*worker_, ep);
    if (who.ok() && (who->any || who->tenant == tenant)) return ep;
  }
  return net::kInvalidEndpoint;
}

std::optional<NodeId> Peers::OnDisconnect(net::EndpointId ep) {
  std::optional<NodeId> memnode;
  for (auto it = memnodes_.begin(); it != memnodes_.end();) {
    if (it->second.ep != ep) {
      ++it;
      continue;
    }
    memnode = it->first;
    it = memnodes_.erase(it);
  }
  for (auto it = cpu_nodes_.begin(); it != cpu_nodes_.end();) {
    std::erase(it->second, ep);
    it = it->second.empty() ? cpu_nodes_.erase(it) : std::next(it);
  }
  return memnode;
}

}  // namespace pulse::memnode
