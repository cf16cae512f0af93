#include "client/connections.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "pulse/cluster.h"

namespace pulse {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

// The worker options with the credentials that prove the client's tenant
// (see ClientOptions::credential).
Result<net::WorkerOptions> WithTenantCredentials(const ClientOptions& options) {
  net::WorkerOptions wo = options.worker;
  net::Credentials creds;
  if (!options.credential.empty()) {
    creds.tenant_key = options.credential;
  } else if (!options.credential_file.empty()) {
    auto key = net::ReadKeyFile(options.credential_file);
    if (!key.ok()) return key.status();
    creds.tenant_key = std::move(*key);
  } else if (wo.credentials) {
    creds = *wo.credentials;
  } else if (const char* path = std::getenv(net::kSecretFileEnvironmentVariable); path != nullptr && *path != '\0') {
    auto secret = net::ReadKeyFile(path);
    if (!secret.ok()) return secret.status();
    creds.cluster_secret = std::move(*secret);
  } else {
    return wo;  // no credentials: only a cluster without a secret accepts this client
  }
  if (creds.tenant && *creds.tenant != options.tenant)
    return Status::InvalidArgument(fmt::format("client: worker.credentials name tenant {} but tenant is {}",
                                               *creds.tenant, options.tenant));
  creds.tenant = options.tenant;
  wo.credentials = std::move(creds);
  return wo;
}

// A failed Connect as the caller sees it: Unavailable, except a refusal of
// our credentials, which waiting will not cure (PermissionDenied).
Status Unreachable(const Status& why, std::string message) {
  if (why.code() == Status::Code::kPermissionDenied) return Status::PermissionDenied(std::move(message));
  return Status::Unavailable(std::move(message));
}

}  // namespace

Status Connections::Open() {
  auto wo = WithTenantCredentials(options);
  if (!wo.ok()) return wo.status();
  auto created = net::Worker::Create(*wo);
  if (!created.ok()) return created.status();
  worker = std::move(*created);
  PULSE_ASSIGN_OR_RETURN(BatchLimits batching, BatchLimitsFromEnvironment(options.batching));
  outbox = std::make_unique<Outbox>(worker.get(), batching);
  control = std::make_unique<ControlClient>(worker.get());
  auto addr = ParseAddress(options.switch_address);
  if (!addr.ok()) return addr.status();
  auto ep = worker->Connect(addr->first, addr->second, options.connect_timeout);
  if (!ep.ok())
    return Unreachable(ep.status(), fmt::format("cannot reach the switch at {}: {}", options.switch_address,
                                                ep.status().ToString()));
  switch_ep = *ep;
  auto hello = control->Call(switch_ep, json{{"op", "hello"}}, options.connect_timeout);
  if (!hello.ok()) return hello.status();
  cpu_node = (*hello)["cpu_node"].get<uint32_t>();
  AdoptRouting(*hello, /*fresh=*/true);
  for (const auto& n : (*hello)["memnodes"]) {
    MemNode node;
    node.id = n["node"].get<uint32_t>();
    node.address = n["address"].get<std::string>();
    node.base = n["base"].get<uint64_t>();
    node.size = n["size"].get<uint64_t>();
    if (!n.value("alive", true)) {  // known but down: reachable later, not now
      nodes.push_back(std::move(node));
      continue;
    }
    auto nh = ConnectNode(node);
    if (!nh.ok()) return nh.status();
    if (options.dispatch.use_cluster_calibration && nh->contains("t_i_ns") && nh->contains("t_d_ns")) {
      // The slowest node's figures: offloading must not overload any of them.
      const double t_i = (*nh)["t_i_ns"].get<double>(), t_d = (*nh)["t_d_ns"].get<double>();
      if (nodes.empty() || t_i / t_d > options.dispatch.t_i_ns / options.dispatch.t_d_ns) {
        options.dispatch.t_i_ns = t_i;
        options.dispatch.t_d_ns = t_d;
      }
    }
    nodes.push_back(std::move(node));
  }
  std::sort(nodes.begin(), nodes.end(), [](const MemNode& a, const MemNode& b) { return a.id < b.id; });
  return Status::Ok();
}

void Connections::AdoptRouting(const json& hello, bool fresh) {
  // A switch that names no routing routes every message itself.
  Result<RoutingMode> mode = Status::NotFound("no routing");
  if (auto r = hello.find("routing"); r != hello.end() && r->is_string())
    mode = ParseRoutingMode(r->get<std::string>(), "the switch's hello");
  routing = mode.ok() ? *mode : RoutingMode::kSwitch;
  if (fresh) {
    routing_table = RoutingTable();
    pages.Reset();
  }
  if (auto t = hello.find("table"); t != hello.end()) {
    if (Result<RoutingTable> table = RoutingTable::FromJson(*t); table.ok()) routing_table.Adopt(std::move(*table));
    (void)pages.Adopt(*t);  // a malformed directory is not taken; the routing table still works
  }
}

void Connections::AdoptPushedTable(std::span<const uint8_t> payload) {
  json j = json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
  if (Result<RoutingTable> table = RoutingTable::FromJson(j); table.ok()) routing_table.Adopt(std::move(*table));
  (void)pages.Adopt(j);
}

bool Connections::OnDisconnect(net::EndpointId ep) {
  for (auto& n : nodes)  // cleaned up outside the handler (EnsureNode)
    if (n.ep == ep) n.lost = true;
  if (ep != switch_ep) return false;
  switch_down = true;
  return true;
}

net::EndpointId Connections::LiveEndpoint(uint32_t node) const {
  for (const MemNode& n : nodes) {
    if (n.id != node) continue;
    if (n.lost) return net::kInvalidEndpoint;
    const RouteEntry* listed = routing_table.Find(node);
    if (listed != nullptr && !listed->alive) return net::kInvalidEndpoint;
    return n.ep;
  }
  return net::kInvalidEndpoint;
}

MemNode* Connections::NodeFor(uint64_t addr) {
  std::optional<Placement> p = Place(addr);
  return p ? p->node : nullptr;
}

std::optional<Connections::Placement> Connections::Place(uint64_t addr) {
  if (std::optional<tier::PageLocation> l = pages.Locate(addr)) {
    for (auto& n : nodes)
      if (n.id == l->node) {
        const uint64_t page_bytes = pages.push()->geometry.page_size();
        return Placement{&n, l->pool_offset, page_bytes - l->pool_offset % page_bytes, l};
      }
    return std::nullopt;
  }
  for (auto& n : nodes)
    if (addr - n.base < n.size) return Placement{&n, addr - n.base, n.size - (addr - n.base), std::nullopt};
  return std::nullopt;
}

Status Connections::AwaitNewerDirectory(uint32_t version, std::chrono::milliseconds timeout) {
  if (pages.version() > version) return Status::Ok();
  if (worker->IsConnected(switch_ep)) IgnoreError(worker->Send(switch_ep, kAmRouting, std::span<const uint8_t>()));
  Status s = worker->RunUntil([&] { return pages.version() > version; }, timeout);
  if (!s.ok() && pages.version() <= version)
    return Status::Timeout(fmt::format("no page directory newer than version {} arrived in {} ms", version,
                                       timeout.count()));
  return Status::Ok();
}

// Connects to memory node `n` at n.address: endpoint, hello.  Returns the
// node's hello answer.
Result<json> Connections::ConnectNode(MemNode& n) {
  auto naddr = ParseAddress(n.address);
  if (!naddr.ok()) return naddr.status();
  auto nep = worker->Connect(naddr->first, naddr->second, options.connect_timeout);
  if (!nep.ok())
    return Unreachable(nep.status(), fmt::format("cannot reach memory node {} at {}: {}", n.id, n.address,
                                                 nep.status().ToString()));
  n.ep = *nep;
  // Naming our CPU node id lets the node send our final responses here.
  // The tenant lets the node decide whether to offer its rack pool.
  auto nh = control->Call(n.ep, json{{"op", "hello"}, {"cpu_node", cpu_node}, {"tenant", options.tenant}},
                          options.connect_timeout);
  if (!nh.ok()) return nh.status();
  n.rack_pool.reset();
  if (auto offer = nh->find("rack_pool"); offer != nh->end()) {
    Result<rack::PoolOffer> parsed = rack::OfferFromJson(*offer);
    if (!parsed.ok()) return Status::InvalidArgument(fmt::format("memory node {}: {}", n.id, parsed.status().message()));
    n.rack_pool = std::move(*parsed);
  }
  return nh;
}

// Ready to use memory node `n`: reconnects a lost connection if the
// switch lists the node as alive (it may have restarted elsewhere).
Status Connections::EnsureNode(MemNode& n) {
  if (n.ep != net::kInvalidEndpoint && !n.lost && worker->IsConnected(n.ep)) return Status::Ok();
  if (n.ep != net::kInvalidEndpoint) (void)worker->Close(n.ep, std::chrono::milliseconds(0));
  n.ep = net::kInvalidEndpoint;
  n.lost = false;
  const std::string what = fmt::format("memory node {} (far [{:#x}, {:#x}))", n.id, n.base, n.base + n.size);
  if (switch_down) return Status::Unavailable(fmt::format("{} is unreachable and so is the switch", what));
  auto hello = control->Call(switch_ep, json{{"op", "hello"}}, options.request_timeout);
  if (!hello.ok()) return Status::Unavailable(fmt::format("{} is unreachable: {}", what, hello.status().message()));
  bool alive = false;
  try {
    for (const auto& m : (*hello)["memnodes"]) {
      if (m["node"].get<uint32_t>() != n.id) continue;
      alive = m.value("alive", false);
      n.address = m["address"].get<std::string>();
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("the switch answered a malformed hello: {}", e.what()));
  }
  if (!alive) return Status::Unavailable(fmt::format("{} is down (the switch has no live connection to it)", what));
  Status connected;
  try {
    auto r = ConnectNode(n);
    if (!r.ok()) connected = r.status();
  } catch (const std::exception& e) {
    connected = Status::InvalidArgument(fmt::format("{} answered a malformed hello: {}", what, e.what()));
  }
  if (!connected.ok()) {
    if (n.ep != net::kInvalidEndpoint) (void)worker->Close(n.ep, std::chrono::milliseconds(0));
    n.ep = net::kInvalidEndpoint;
    return Status::Unavailable(fmt::format("{} at {}: reconnecting: {}", what, n.address, connected.message()));
  }
  ++counters.reconnections;
  return Status::Ok();
}

// Ready to send through the switch: reconnects a lost one (bounded by
// reconnect_timeout; see ClientOptions).
Status Connections::EnsureSwitch() {
  if (!switch_down) return Status::Ok();
  auto down = [&](const std::string& why) {
    return Status::Unavailable(fmt::format("the switch at {} is down ({})", options.switch_address, why));
  };
  if (options.reconnect_timeout.count() <= 0) return down("reconnection is off");
  if (Clock::now() < next_switch_attempt) return down(switch_error);
  auto addr = ParseAddress(options.switch_address);
  if (!addr.ok()) return addr.status();
  if (switch_ep != net::kInvalidEndpoint) (void)worker->Close(switch_ep, std::chrono::milliseconds(0));
  switch_ep = net::kInvalidEndpoint;
  const auto deadline = Clock::now() + options.reconnect_timeout;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };
  std::string why = "no attempt";
  while (Clock::now() < deadline) {
    auto ep = worker->Connect(addr->first, addr->second, std::min(left(), options.connect_timeout));
    if (!ep.ok()) {
      why = ep.status().message();
      (void)worker->RunUntil([] { return false; }, std::min(left(), std::chrono::milliseconds(50)));
      continue;
    }
    // Memory nodes re-register with a new switch within about a second:
    // wait (bounded) until it knows every node we know.
    for (;;) {
      auto hello = control->Call(*ep, json{{"op", "hello"}}, std::min(left(), options.connect_timeout));
      if (!hello.ok()) {
        why = hello.status().message();
        break;
      }
      std::set<uint32_t> listed;
      for (const auto& m : (*hello)["memnodes"])
        if (m.is_object() && m.contains("node") && m["node"].is_number_unsigned()) listed.insert(m["node"].get<uint32_t>());
      std::set<uint32_t> missing;
      for (const auto& n : nodes)
        if (!listed.count(n.id)) missing.insert(n.id);
      if (missing.empty() || Clock::now() >= deadline) {
        switch_ep = *ep;
        switch_down = false;
        unrouted = std::move(missing);
        if ((*hello).contains("cpu_node") && (*hello)["cpu_node"].is_number_unsigned())
          cpu_node = (*hello)["cpu_node"].get<uint32_t>();
        AdoptRouting(*hello, /*fresh=*/true);
        ++counters.reconnections;
        return Status::Ok();
      }
      why = fmt::format("it does not know {} memory node(s) yet", missing.size());
      (void)worker->RunUntil([] { return false; }, std::min(left(), std::chrono::milliseconds(50)));
    }
    (void)worker->Close(*ep, std::chrono::milliseconds(0));
  }
  switch_error = fmt::format("reconnecting for {} ms failed: {}", options.reconnect_timeout.count(), why);
  next_switch_attempt = Clock::now() + options.reconnect_timeout;
  return down(switch_error);
}

// A traversal starting on a node the (restarted) switch did not list.
Status Connections::CheckRouted(uint64_t cur_ptr) {
  MemNode* n = NodeFor(cur_ptr);
  if (n == nullptr || !unrouted.count(n->id)) return Status::Ok();
  auto hello = control->Call(switch_ep, json{{"op", "hello"}}, options.request_timeout);
  if (hello.ok()) {
    for (const auto& m : (*hello)["memnodes"])
      if (m.is_object() && m.value("node", UINT32_MAX) == n->id) unrouted.erase(n->id);
  }
  if (!unrouted.count(n->id)) return Status::Ok();
  return Status::Unavailable(fmt::format("traversal: memory node {} owning {:#x} has not registered with the switch",
                                         n->id, cur_ptr));
}


void Connections::QueueTraversal(net::EndpointId ep, std::vector<uint8_t> bytes, uint64_t request_id) {
  outbox->Add(ep, std::move(bytes), request_id);
}

void Connections::FlushTraversals() {
  if (outbox == nullptr || outbox->empty()) return;
  outbox->Flush([this](net::EndpointId to, Outbox::Entry&& e, const Status&) {
    if (to == switch_ep) {
      // Before its disconnect handler runs; the request's timer re-sends it.
      if (!worker->IsConnected(switch_ep)) switch_down = true;
      return;
    }
    // The memory node's connection failed since the request was queued:
    // the switch routes it (the same bytes).
    if (counters.direct_sends > 0) --counters.direct_sends;
    if (worker->Send(switch_ep, kAmTraversal, std::move(e.bytes)).ok()) {
      ++counters.switch_sends;
    } else if (!worker->IsConnected(switch_ep)) {
      switch_down = true;
    }
  });
}

}  // namespace pulse
