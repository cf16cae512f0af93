#include "switch/switch_server.h"

#include "node/node_control.h"
#include "node/node_tenant.h"
#include "pulse/cluster.h"
#include "protocol/rpc_message.h"

namespace pulse::switchd {

using nlohmann::json;
using std::chrono::milliseconds;

namespace {

// Longest idle wait: the Worker wakes at once for traffic and RequestStop().
constexpr milliseconds kIdleWait{1000};

}  // namespace

Result<std::unique_ptr<SwitchServer>> SwitchServer::Create(const SwitchServerOptions& options,
                                                           const node::NodeLog* log) {
  SwitchServerOptions o = options;
  PULSE_ASSIGN_OR_RETURN(o.batching, BatchLimitsFromEnvironment(options.batching));
  net::WorkerOptions wo = options.worker;
  if (wo.name.empty() || wo.name == "pulse") wo.name = "switch";
  PULSE_ASSIGN_OR_RETURN(DirectoryHost directory, DirectoryHost::Make(o.page_bytes));
  Result<std::unique_ptr<net::Worker>> worker = net::Worker::Create(wo);
  if (!worker.ok()) return worker.status();
  return std::unique_ptr<SwitchServer>(new SwitchServer(o, log, std::move(worker).value(), std::move(directory)));
}

SwitchServer::SwitchServer(const SwitchServerOptions& options, const node::NodeLog* log,
                           std::unique_ptr<net::Worker> worker, DirectoryHost directory)
    : options_(options),
      log_(log),
      worker_(std::move(worker)),
      directory_(std::move(directory)),
      out_(worker_.get(), options.batching) {
  // Traversals and RPCs follow a page that moved (docs/tier.md).
  router_.SetPageOwner([this](uint64_t addr) { return directory_.Owner(addr); });
  worker_->SetHandler(kAmControl, [this](net::EndpointId from, std::span<const uint8_t> p) {
    OnControl(from, p);
  });
  worker_->SetHandler(kAmTraversal, [this](net::EndpointId from, std::span<const uint8_t> p) {
    OnTraversal(from, p);
  });
  worker_->SetHandler(kAmBatch, [this](net::EndpointId from, std::span<const uint8_t> p) { OnBatch(from, p); });
  worker_->SetHandler(kAmRpcRequest, [this](net::EndpointId from, std::span<const uint8_t> p) {
    OnRpcRequest(from, p);
  });
  worker_->SetHandler(kAmRpcReply, [this](net::EndpointId from, std::span<const uint8_t> p) { OnRpcReply(from, p); });
  // An empty kAmRouting asks for the table: a CPU node a memory node
  // redirected with a newer version than its own (TraversalPath::
  // RefreshTable).  Any other payload is not a request and is dropped.
  worker_->SetHandler(kAmRouting, [this](net::EndpointId from, std::span<const uint8_t> p) {
    if (!p.empty()) return;
    ++counters_.table_requests;
    SendRouting(from, RoutingPayload().dump());
  });
  worker_->SetDisconnectHandler([this](net::EndpointId ep, const Status& why) { OnDisconnect(ep, why); });
  worker_->SetAcceptHandler([this](net::EndpointId ep, const std::string& peer) {
    log_->Debug("connection {} from {}", ep, peer);
  });
}

SwitchServer::~SwitchServer() = default;

void SwitchServer::RequestStop() {
  stop_.store(true, std::memory_order_release);
  worker_->Wake();
}

Status SwitchServer::Start() {
  Result<uint16_t> port = worker_->Listen(options_.listen_host, options_.listen_port);
  if (!port.ok())
    return Status::IoError(fmt::format("cannot listen on {}:{}: {}", options_.listen_host, options_.listen_port,
                                       port.status().message()));
  port_ = *port;
  log_->Info("listening on {}:{}", options_.listen_host, port_);
  if (options_.swaps) {
    net::Worker* w = worker_.get();
    Result<std::unique_ptr<SwapDriver>> driver =
        SwapDriver::Start(options_.worker, options_.swap_timeout, [w] { w->Wake(); });
    if (!driver.ok()) return Status::FromCode(driver.status().code(), "swaps: " + driver.status().message());
    driver_ = std::move(driver).value();
    swaps_.set_driver(driver_.get());
    UpdateSwapView();
    log_->Info("hot-page swaps on (a memory node's answer waited for at most {} ms)", options_.swap_timeout.count());
  }
  return Status::Ok();
}

Status SwitchServer::Run() {
  while (!stopping()) {
    Status s = worker_->WaitForEvent(net::Clock::now() + kIdleWait);
    // The end of a network pass: what it routed leaves now, aggregated.
    Flush();
    if (driver_) ServeSwaps();
    if (!s.ok() && s.code() != Status::Code::kTimeout) {
      log_->Error("waiting for the network: {}", s.ToString());
      return s;
    }
  }
  log_->Info("shutting down");
  return Status::Ok();
}

// ---- traversals ----------------------------------------------------------

uint32_t SwitchServer::CpuNodeOf(net::EndpointId ep) {
  auto it = cpu_of_.find(ep);
  if (it != cpu_of_.end()) return it->second;
  const uint32_t id = next_cpu_node_++;
  cpu_of_.emplace(ep, id);
  cpu_eps_.emplace(id, ep);
  log_->Info("CPU node {} joined (connection {})", id, ep);
  return id;
}

void SwitchServer::OnTraversal(net::EndpointId from, std::span<const uint8_t> payload) {
  ++counters_.messages_in;
  counters_.bytes_in += payload.size();
  Result<TraversalMessage> decoded = DecodeMessage(payload, options_.max_scratch_bytes);
  if (!decoded.ok()) {
    ++counters_.malformed;
    log_->Debug("malformed traversal message ({} bytes) from connection {}: {}", payload.size(), from,
                decoded.status().message());
    return;
  }
  TraversalMessage& m = *decoded;
  const bool from_memnode = memnode_of_.count(from) != 0;
  if (!from_memnode && m.kind == MessageKind::kResponse) {
    // Only memory nodes answer; a CPU node cannot inject responses.
    ++counters_.malformed;
    log_->Debug("response {:#x} from connection {}, which is no memory node: dropped", m.request_id, from);
    return;
  }
  // Anything not from a memory node comes from a CPU node: its requests are
  // answered to the connection they came on, whatever they claim.
  if (!from_memnode && m.kind == MessageKind::kRequest) {
    const uint32_t cpu = CpuNodeOf(from);
    if (m.cpu_node != cpu) {
      log_->Debug("request {:#x} names CPU node {} but came from CPU node {}", m.request_id, m.cpu_node, cpu);
      m.cpu_node = cpu;
    }
    // ... and run as the tenant its connection proved, whatever it claims
    // (the memory nodes trust the switch's word).
    Result<node::ConnectionTenant> who = node::TenantOf(*worker_, from);
    if (!who.ok()) {
      ++counters_.malformed;
      log_->Debug("request {:#x} from connection {}: {}; dropped", m.request_id, from, who.status().ToString());
      return;
    }
    if (!who->any && m.tenant != who->tenant) {
      log_->Debug("request {:#x} names tenant {} but came from tenant {}", m.request_id, m.tenant, who->tenant);
      m.tenant = who->tenant;
    }
  }
  AddLeg(&m);  // the switch's hop is a message of its own (critical-path accounting)
  RouteDecision d = router_.Route(&m);
  if (d.to == RouteDecision::To::kCpuNode) return SendToCpuNode(d.node, m);
  auto node = memnodes_.find(d.node);
  if (node != memnodes_.end() && SendToMemNode(&node->second, m)) return;
  AnswerUnavailable(std::move(m), d.node);
}

void SwitchServer::OnBatch(net::EndpointId from, std::span<const uint8_t> payload) {
  Status s = UnpackTraversalBatch(payload, &counters_.batches_in,
                                  [&](std::span<const uint8_t> m) { OnTraversal(from, m); });
  if (!s.ok()) log_->Debug("connection {}: {}", from, s.message());
}

void SwitchServer::AnswerUnavailable(TraversalMessage m, NodeId node) {
  // The owner is down: the CPU node gets the state back, untouched, and may
  // re-issue once the node is back.
  ++counters_.node_unavailable;
  log_->Debug("request {:#x}: memory node {} is unavailable", m.request_id, node);
  m.kind = MessageKind::kResponse;
  m.status = TraversalStatus::kNodeUnavailable;
  m.fault_addr = m.cur_ptr;
  m.program.clear();
  SendToCpuNode(m.cpu_node, m);
}

// Outbox tags: a memory node's id + 1, or 0 for a CPU node.
bool SwitchServer::SendToMemNode(MemNode* node, const TraversalMessage& message) {
  if (node->ep == net::kInvalidEndpoint) return false;
  out_.Add(node->ep, EncodeMessage(message), uint64_t{node->node} + 1);
  return true;
}

void SwitchServer::SendToCpuNode(uint32_t cpu_node, const TraversalMessage& message) {
  auto ep = cpu_eps_.find(cpu_node);
  if (ep == cpu_eps_.end()) {
    ++counters_.responses_dropped;
    log_->Debug("response {:#x} for CPU node {} dropped: not connected", message.request_id, cpu_node);
    return;
  }
  out_.Add(ep->second, EncodeMessage(message), 0);
}

void SwitchServer::Flush() {
  // A failed send to a memory node queues node_unavailable answers, or the
  // message again for the node's new connection: sent by the next round
  // (bounded: a node is marked dead once, a message re-queued only for a
  // connection other than the one that failed, CPU nodes' failures queue
  // nothing).
  for (int round = 0; round < 3 && !out_.empty(); ++round) {
    out_.Flush([this](net::EndpointId to, Outbox::Entry&& e, const Status& why) {
      if (e.tag == 0) {
        ++counters_.responses_dropped;
        log_->Debug("response for a CPU node dropped: {}", why.ToString());
        return;
      }
      const auto node = static_cast<NodeId>(e.tag - 1);
      auto n = memnodes_.find(node);
      if (n != memnodes_.end() && n->second.ep != net::kInvalidEndpoint && n->second.ep != to) {
        // Queued for a connection the node has replaced since (it
        // re-registered in this pass): the new one takes it, and the node
        // is not marked dead for its old connection's failure.
        out_.Add(n->second.ep, std::move(e.bytes), e.tag);
        return;
      }
      if (n != memnodes_.end()) MarkDead(&n->second, why.message());
      // Our own encoding: it decodes.
      Result<TraversalMessage> m = DecodeMessage(e.bytes, options_.max_scratch_bytes);
      if (m.ok()) AnswerUnavailable(std::move(m).value(), node);
    });
  }
}

// ---- RPC baseline messages (plain forwarding) ------------------------------

void SwitchServer::OnRpcRequest(net::EndpointId from, std::span<const uint8_t> payload) {
  uint64_t id = 0, start = 0;
  uint16_t handler = 0;
  if (memnode_of_.count(from) != 0 || !rpc::PeekRpcRoute(payload, &id, &start) ||
      !rpc::PeekRpcRequestId(payload, &id, &handler)) {
    ++counters_.rpc_dropped;
    log_->Debug("rpc request ({} bytes) from connection {}: not a CPU node's request; dropped", payload.size(), from);
    return;
  }
  // The memory node trusts the tenant the switch forwards (a cluster peer's
  // word), so the switch forwards only what the connection proved: a
  // tenant's claim of another tenant is overwritten.
  Result<node::ConnectionTenant> who = node::TenantOf(*worker_, from);
  if (!who.ok()) {
    ++counters_.rpc_dropped;
    log_->Debug("rpc request from connection {}: {}; dropped", from, who.status().ToString());
    return;
  }
  // The reply must return to the connection that asked, whatever it claims.
  const uint32_t cpu = CpuNodeOf(from);
  id = MakeRequestId(cpu, id);
  std::vector<uint8_t> bytes(payload.begin(), payload.end());
  (void)rpc::SetRpcRequestId(bytes, id);
  if (!who->any) (void)rpc::SetRpcRequestTenant(bytes, who->tenant);
  const std::optional<NodeId> owner = router_.Owner(start);
  auto node = owner ? memnodes_.find(*owner) : memnodes_.end();
  if (node != memnodes_.end() && node->second.ep != net::kInvalidEndpoint) {
    const size_t n = bytes.size();
    Status s = worker_->Send(node->second.ep, kAmRpcRequest, std::move(bytes));
    if (s.ok()) {
      ++counters_.rpc_requests;
      counters_.rpc_bytes += n;
      return;
    }
    MarkDead(&node->second, s.message());
  }
  // Nobody owns start, or its owner is down: answered here.
  rpc::RpcReply r;
  r.status = owner ? TraversalStatus::kNodeUnavailable : TraversalStatus::kFaultInvalidPointer;
  r.handler = handler;
  r.request_id = id;
  r.next_ptr = r.fault_addr = start;
  ++counters_.rpc_answered;
  if (!worker_->Send(from, kAmRpcReply, rpc::EncodeRpcReply(r)).ok()) ++counters_.rpc_dropped;
}

void SwitchServer::OnRpcReply(net::EndpointId from, std::span<const uint8_t> payload) {
  uint64_t id = 0;
  if (memnode_of_.count(from) == 0 || !rpc::PeekRpcReplyId(payload, &id)) {
    ++counters_.rpc_dropped;  // only memory nodes answer
    log_->Debug("rpc reply ({} bytes) from connection {}, which is no memory node: dropped", payload.size(), from);
    return;
  }
  auto ep = cpu_eps_.find(static_cast<uint32_t>(id >> 40));  // MakeRequestId's CPU-node bits
  const size_t n = payload.size();
  if (ep == cpu_eps_.end() ||
      !worker_->Send(ep->second, kAmRpcReply, std::vector<uint8_t>(payload.begin(), payload.end())).ok()) {
    ++counters_.rpc_dropped;
    return;
  }
  ++counters_.rpc_replies;
  counters_.rpc_bytes += n;
}

void SwitchServer::MarkDead(MemNode* node, const std::string& why) {
  if (node->ep == net::kInvalidEndpoint) return;
  log_->Warn("memory node {} at {} is down ({}); requests for [{:#x}, {:#x}) now get node_unavailable",
             node->node, node->address, why, node->base, node->base + node->size);
  memnode_of_.erase(node->ep);
  (void)worker_->Close(node->ep);
  node->ep = net::kInvalidEndpoint;
  routing_.SetAlive(node->node, false);
  PushRouting();
  UpdateSwapView();
}

void SwitchServer::UpdateSwapView() {
  if (!driver_) return;
  std::map<uint32_t, std::string> addresses;
  for (const auto& [id, n] : memnodes_)
    if (n.ep != net::kInvalidEndpoint) addresses[id] = n.address;
  driver_->UpdateView(directory_.state(), std::move(addresses));
}

void SwitchServer::ServeSwaps() {
  driver_->ServeSwitch(
      [this](const tier::PageDirectory& moved, std::span<const tier::PageId> pages) -> Result<tier::TierPush> {
        PULSE_ASSIGN_OR_RETURN(bool changed, directory_.ApplyMoves(moved, pages));
        if (changed) {
          log_->Info("swap: {} page(s) moved; page directory version {}", pages.size(),
                     directory_.state().directory.version());
          PushRouting();  // the memory nodes and CPU nodes follow the pages
        }
        return directory_.state();
      },
      [this](SwapResult r) {
        if (r.report.ok())
          log_->Info("swap of page {} for rack {}: {}", r.request.page, r.request.requester,
                     tier::SwapOutcomeName(r.report->outcome));
        else
          log_->Warn("swap of page {} for rack {} failed: {}", r.request.page, r.request.requester,
                     r.report.status().ToString());
        swaps_.Finished(r);
      });
}

json SwitchServer::RoutingPayload() const {
  json table = routing_.ToJson();
  if (directory_.active()) table[tier::kTierPushMember] = directory_.PushMember();
  return table;
}

void SwitchServer::AddRouting(json* answer) const {
  (*answer)["routing"] = RoutingModeName(options_.routing);
  (*answer)["table"] = RoutingPayload();
}

void SwitchServer::SendRouting(net::EndpointId ep, const std::string& table) {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(table.data()), table.size());
  if (worker_->Send(ep, kAmRouting, bytes).ok()) ++counters_.routing_pushes;
}

void SwitchServer::PushRouting() {
  const std::string table = RoutingPayload().dump();
  for (const auto& [ep, id] : memnode_of_) SendRouting(ep, table);
  for (const auto& [id, ep] : cpu_eps_) SendRouting(ep, table);
  log_->Debug("routing table version {} pushed (page directory version {})", routing_.version(),
              directory_.state().directory.version());
}

void SwitchServer::OnDisconnect(net::EndpointId ep, const Status& why) {
  if (auto m = memnode_of_.find(ep); m != memnode_of_.end()) {
    MarkDead(&memnodes_.at(m->second), why.message());
    return;
  }
  if (auto c = cpu_of_.find(ep); c != cpu_of_.end()) {
    log_->Info("CPU node {} left ({})", c->second, why.message());
    cpu_eps_.erase(c->second);
    cpu_of_.erase(c);
  } else {
    log_->Debug("connection {} closed: {}", ep, why.message());
  }
  (void)worker_->Close(ep);
}

// ---- control -------------------------------------------------------------

void SwitchServer::OnControl(net::EndpointId from, std::span<const uint8_t> payload) {
  ++counters_.control_ops;
  json seq;
  Result<node::ControlRequest> req = node::ParseControl(payload, &seq);
  Result<json> answer = json::object();
  bool shutdown = false;
  if (!req.ok()) {
    answer = req.status();
  } else if (req->op == "register_memnode") {
    // Only a holder of the cluster secret may claim a range of far memory.
    Status allowed = node::RequireClusterPeer(*worker_, from, req->op);
    answer = allowed.ok() ? RegisterMemNode(from, req->body) : Result<json>(allowed);
  } else if (req->op == "swap_request") {
    answer = swaps_.Request(req->body);
  } else if (req->op == "hello") {
    answer = Hello(from);
  } else if (req->op == "stats") {
    answer = json{{"role", "switch"}, {"instance", options_.instance_id}, {"insecure", worker_->open()},
                  {"counters", Stats()}, {"memnodes", MemNodeList()}};
  } else if (req->op == "shutdown") {
    Status allowed = node::RequireClusterPeer(*worker_, from, req->op);
    shutdown = allowed.ok();
    if (shutdown) log_->Info("shutdown requested by connection {}", from);
    if (!shutdown) answer = allowed;
  } else {
    answer = Status::InvalidArgument(fmt::format("control: unknown op '{}'", req->op));
  }
  if (!node::SendControlReply(*worker_, from, seq, std::move(answer), *log_)) ++counters_.control_errors;
  if (shutdown) stop_.store(true, std::memory_order_release);
}

Result<json> SwitchServer::RegisterMemNode(net::EndpointId from, const json& body) {
  constexpr std::string_view op = "register_memnode";
  Result<uint32_t> id = node::GetU32(body, "node", op);
  if (!id.ok()) return id.status();
  Result<std::string> address = node::GetString(body, "address", op);
  if (!address.ok()) return address.status();
  Result<uint64_t> base = node::GetU64(body, "base", op);
  if (!base.ok()) return base.status();
  Result<uint64_t> size = node::GetU64(body, "size", op);
  if (!size.ok()) return size.status();
  if (*size == 0) return Status::InvalidArgument("register_memnode: size must be positive");
  std::string rack;  // optional: a node without a rack stays out of the page directory
  if (body.contains("rack")) {
    Result<std::string> r = node::GetString(body, "rack", op);
    if (!r.ok()) return r.status();
    rack = *r;
  }
  if (cpu_of_.count(from) != 0)
    return Status::FailedPrecondition("register_memnode: this connection joined as a CPU node");
  if (auto other = memnode_of_.find(from); other != memnode_of_.end() && other->second != *id)
    return Status::FailedPrecondition(
        fmt::format("register_memnode: this connection is memory node {} already", other->second));

  auto it = memnodes_.find(*id);
  if (it != memnodes_.end()) {
    MemNode& n = it->second;
    // A node that comes back (restarted, or reconnected after losing us)
    // replaces its earlier self.  The router has no removal, so the range
    // must be the same.
    if (n.base != *base || n.size != *size)
      return Status::FailedPrecondition(fmt::format(
          "register_memnode: node {} was registered with [{:#x}, +{}) and now announces [{:#x}, +{}); "
          "restart the switch to change a node's pool",
          *id, n.base, n.size, *base, *size));
    PULSE_RETURN_IF_ERROR(JoinDirectory(*id, rack, *size));
    if (n.ep != net::kInvalidEndpoint && n.ep != from) {
      log_->Info("memory node {} re-registered from a new connection; closing the old one", *id);
      memnode_of_.erase(n.ep);
      (void)worker_->Close(n.ep);
    }
    n.address = *address;
    n.ep = from;
  } else {
    // The directory first: the router's range cannot be taken back.
    PULSE_RETURN_IF_ERROR(JoinDirectory(*id, rack, *size));
    Status s = router_.AddRange(*base, *size, *id);
    if (!s.ok()) return Status::FromCode(s.code(), "register_memnode: node " + std::to_string(*id) + ": " + s.message());
    memnodes_.emplace(*id, MemNode{*id, *address, *base, *size, from});
  }
  memnode_of_[from] = *id;
  log_->Info("memory node {} at {} serves far [{:#x}, {:#x})", *id, *address, *base, *base + *size);
  // The router accepted the range, so the table does too.
  if (Status s = routing_.Put(RouteEntry{*id, *address, *base, *size, true}); !s.ok())
    return Status::Internal("register_memnode: " + s.message());
  PushRouting();
  UpdateSwapView();
  json answer = json::object();
  AddRouting(&answer);
  return answer;
}

Status SwitchServer::JoinDirectory(uint32_t node, const std::string& rack, uint64_t pool_bytes) {
  PULSE_ASSIGN_OR_RETURN(bool paged, directory_.Register(node, rack, pool_bytes));
  if (paged)
    log_->Info("memory node {} of rack '{}' joins the page directory (version {})", node, rack,
               directory_.state().directory.version());
  return Status::Ok();
}

json SwitchServer::MemNodeList() const {
  json list = json::array();
  for (const auto& [id, n] : memnodes_) {
    list.push_back({{"node", id},
                    {"address", n.address},
                    {"base", n.base},
                    {"size", n.size},
                    {"alive", n.ep != net::kInvalidEndpoint}});
  }
  return list;
}

json SwitchServer::Hello(net::EndpointId from) {
  json answer{{"cpu_node", CpuNodeOf(from)}, {"memnodes", MemNodeList()}};
  AddRouting(&answer);
  return answer;
}

json SwitchServer::AggregationJson() const {
  json j = InboundJson(counters_.batches_in);
  j["out"] = OutboxJson(out_.counters());
  return j;
}

json SwitchServer::Stats() const {
  const RouterCounters& r = router_.counters();
  size_t alive = 0;
  for (const auto& [id, n] : memnodes_) alive += n.ep != net::kInvalidEndpoint;
  return json{{"requests", r.requests},
              {"forwards", r.forwards},
              {"responses", r.responses},
              {"invalid_pointers", r.invalid_pointers},
              {"malformed", counters_.malformed},
              {"node_unavailable", counters_.node_unavailable},
              {"responses_dropped", counters_.responses_dropped},
              {"messages_in", counters_.messages_in},
              {"messages_out", out_.counters().carried},
              {"bytes_in", counters_.bytes_in},
              {"bytes_out", out_.counters().bytes},
              {"aggregation", AggregationJson()},
              {"control_ops", counters_.control_ops},
              {"control_errors", counters_.control_errors},
              {"rpc_requests", counters_.rpc_requests},
              {"rpc_replies", counters_.rpc_replies},
              {"rpc_answered", counters_.rpc_answered},
              {"rpc_dropped", counters_.rpc_dropped},
              {"rpc_bytes", counters_.rpc_bytes},
              {"routing", RoutingModeName(options_.routing)},
              {"routing_version", routing_.version()},
              {"routing_pushes", counters_.routing_pushes},
              {"table_requests", counters_.table_requests},
              {"tier", directory_.StatsJson()},
              {"swaps", swaps_.StatsJson()},
              {"memnodes", memnodes_.size()},
              {"memnodes_alive", alive},
              {"cpu_nodes", cpu_eps_.size()},
              {"cpu_seconds", node::ProcessCpuSeconds()},
              {"net", node::NetCountersJson(worker_->counters())}};
}

}  // namespace pulse::switchd
