#include "memnode/memnode_server.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <thread>

#include <fmt/ranges.h>

#include "protocol/routing_table.h"
#include "node/node_control.h"
#include "node/node_tenant.h"
#include "protocol/control_reply.h"
#include "pulse/cluster.h"
#include "common/elapsed.h"

namespace pulse::memnode {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

// How long a registration may take once connected, and how often a lost
// switch is retried.
constexpr milliseconds kRegistrationTimeout{5000};
constexpr milliseconds kReconnectInterval{1000};
constexpr milliseconds kReconnectAttempt{1000};
// Longest wait for the network when idle: bounds how late a reconnection
// attempt starts (the Worker wakes at once for traffic and RequestStop()).
constexpr milliseconds kIdleWait{1000};

// `stats`: each engine pipeline's traversals in flight and served.
json PipelineLoadsJson(const std::vector<PipelineLoad>& loads) {
  json out = json::array();
  for (const PipelineLoad& l : loads)
    out.push_back(json{{"active", l.active},
                       {"served", l.served},
                       {"prefetches_issued", l.prefetches_issued},
                       {"prefetches_ignored", l.prefetches_ignored}});
  return out;
}

std::span<const uint8_t> AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

Result<std::unique_ptr<MemNodeServer>> MemNodeServer::Create(const MemNodeServerOptions& options,
                                                             const node::NodeLog* log) {
  if (options.pool_bytes == 0) return Status::InvalidArgument("the pool size must be positive");
  if (options.pool_bytes > kFarSpan)
    return Status::InvalidArgument(fmt::format("the pool is larger than a node's far span ({} bytes)", kFarSpan));
  if (options.granularity_bytes == 0 || options.pool_bytes % options.granularity_bytes != 0)
    return Status::InvalidArgument("the pool size must be a positive multiple of the granularity");
  MemNodeServerOptions o = options;
  PULSE_ASSIGN_OR_RETURN(o.batching, BatchLimitsFromEnvironment(options.batching));
  net::WorkerOptions wo = options.worker;
  if (wo.name.empty() || wo.name == "pulse") wo.name = fmt::format("memnode-{}", options.node);
  Result<std::unique_ptr<net::Worker>> worker = net::Worker::Create(wo);
  if (!worker.ok()) return worker.status();
  return std::unique_ptr<MemNodeServer>(new MemNodeServer(o, log, std::move(worker).value()));
}

MemNodeServer::MemNodeServer(const MemNodeServerOptions& options, const node::NodeLog* log,
                             std::unique_ptr<net::Worker> worker)
    : options_(options),
      log_(log),
      worker_(std::move(worker)),
      sessions_(options.session_grace, options.restored_session_grace),
      service_(&table_, options.service),
      far_base_(FarBase(options.node)),
      // A peer is tried for at most a second, and not again for a second
      // after it failed: meanwhile its continuations go through the switch.
      peers_(worker_.get(), milliseconds(1000), milliseconds(1000)),
      to_cpu_(worker_.get(), options.batching),
      to_peers_(worker_.get(), options.batching),
      to_switch_(worker_.get(), options.batching) {
  send_ = [this](TraversalMessage&& m) { Dispatch(std::move(m)); };
  // Pipeline threads (--pipelines N > 1) wake the network wait to have
  // their finished traversals answered.
  service_.set_wake([w = worker_.get()] { w->Wake(); });
  worker_->SetHandler(kAmControl, [this](net::EndpointId from, std::span<const uint8_t> p) {
    OnControl(from, p);
  });
  worker_->SetHandler(kAmControlReply, [this](net::EndpointId from, std::span<const uint8_t> p) {
    OnControlReply(from, p);
  });
  worker_->SetHandler(kAmTraversal, [this](net::EndpointId from, std::span<const uint8_t> p) {
    const Clock::time_point t0 = Clock::now();
    OnTraversal(from, p);
    counters_.handle_ns += NanosSince(t0);
  });
  worker_->SetHandler(kAmBatch, [this](net::EndpointId from, std::span<const uint8_t> p) {
    const Clock::time_point t0 = Clock::now();
    OnBatch(from, p);
    counters_.handle_ns += NanosSince(t0);
  });
  worker_->SetHandler(kAmRouting, [this](net::EndpointId from, std::span<const uint8_t> p) {
    if (from != switch_ep_) return;  // only the switch's word counts
    json table = json::parse(p.begin(), p.end(), nullptr, /*allow_exceptions=*/false);
    if (!AdoptRouting(table)) log_->Warn("malformed routing table pushed by the switch");
  });
  ExtensionContext context;
  context.table = &table_;
  context.span_base = far_base_;
  context.span_size = options.pool_bytes;
  context.worker = worker_.get();
  context.node = options.node;
  context.peer = [this](uint32_t node) -> Result<net::EndpointId> {
    const RouteEntry* e = routing_.Find(node);
    if (e == nullptr || node == options_.node)
      return Status::Unavailable(fmt::format("memory node {} is not in the routing table", node));
    return peers_.MemNode(*e);
  };
  context.pool_reattached = [this] { return pool_ != nullptr && pool_->reattached(); };
  for (const MemNodeExtensionFactory& make : options.extensions) {
    MemNodeExtension* e = extensions_.emplace_back(make(context)).get();
    worker_->SetHandler(e->request_am(), [this, e](net::EndpointId from, std::span<const uint8_t> p) {
      HandleExtensionRequest(e, from, p);
    });
  }
  worker_->SetDisconnectHandler([this](net::EndpointId ep, const Status& why) { OnDisconnect(ep, why); });
  worker_->SetAcceptHandler([this](net::EndpointId ep, const std::string& peer) {
    log_->Debug("connection {} from {}", ep, peer);
  });
}

MemNodeServer::~MemNodeServer() {
  // Pipeline threads read the pool and wake the worker: they end first.
  service_.StopPipelines();
  if (worker_ != nullptr && switch_ep_ != net::kInvalidEndpoint) (void)worker_->Close(switch_ep_);
  ring_.reset();   // its registrations go before the worker
  // So do the extensions' (a chain replica's rings to its successor).
  if (worker_ != nullptr)
    for (const auto& e : extensions_) worker_->SetHandler(e->request_am(), {});
  extensions_.clear();
  owned_.clear();  // the allocations' registrations go before the worker
  worker_.reset();
  pool_.reset();
}

void MemNodeServer::RequestStop() {
  stop_.store(true, std::memory_order_release);
  worker_->Wake();
}

std::string MemNodeServer::Address() const {
  const std::string& host = options_.advertise_host.empty() ? options_.listen_host : options_.advertise_host;
  return fmt::format("{}:{}", host, port_);
}

Status MemNodeServer::Start() {
  Result<uint16_t> port = worker_->Listen(options_.listen_host, options_.listen_port);
  if (!port.ok())
    return Status::IoError(fmt::format("cannot listen on {}:{}: {}", options_.listen_host,
                                       options_.listen_port, port.status().message()));
  port_ = *port;
  if (options_.ring_path) {
    // A service's entry (another node's chain replica forwarding by ring)
    // goes where the service's message would have gone.
    RingServer::ServiceEntryFn to_service = [this](net::EndpointId from, uint16_t am,
                                                   std::span<const uint8_t> message) -> Status {
      for (const auto& e : extensions_) {
        if (e->request_am() != am) continue;
        HandleExtensionRequest(e.get(), from, message);
        return Status::Ok();
      }
      return Status::NotFound(fmt::format("memory node {} hosts no service on id {}", options_.node, am));
    };
    Result<std::unique_ptr<RingServer>> ring = RingServer::Create(worker_.get(), options_.ring, options_.max_scratch_bytes,
                                                                  &service_, &send_, std::move(to_service));
    if (!ring.ok()) return ring.status();
    ring_ = std::move(ring).value();
  }

  shm_name_ = options_.shm_name.empty() ? fmt::format("/pulse-node-{}-{}", options_.node, port_) : options_.shm_name;
  Result<std::unique_ptr<SharedPool>> pool =
      options_.reattach_pool
          ? SharedPool::CreateOrReattach(shm_name_, options_.pool_bytes,
                                         AllocationJournal::BytesFor(options_.pool_bytes, options_.granularity_bytes) +
                                             StoreRecord::BytesFor(StoreRecord::kDefaultSlots))
          : SharedPool::Create(shm_name_, options_.pool_bytes);
  if (!pool.ok()) return pool.status();
  pool_ = std::move(pool).value();
  if (pool_->replaced_stale()) log_->Warn("replaced the shared-memory object {} left by a node that died", shm_name_);
  allocator_ = std::make_unique<PoolAllocator>(pool_->size(), options_.granularity_bytes);
  PULSE_RETURN_IF_ERROR(RestoreAllocations());
  if (options_.calibrate) {
    auto c = CalibrateEngine(16ull << 20, options_.service.engine.workspaces, 0.1, options_.service.engine.engine);
    if (c.ok()) {
      calibration_ = *c;
      log_->Info("engine calibration: t_i {:.2f} ns per instruction, t_d {:.1f} ns per window load",
                 calibration_.t_i_ns, calibration_.t_d_ns);
    } else {
      log_->Warn("engine calibration failed: {}", c.status().message());
    }
  }
  for (const auto& e : extensions_) {
    const std::string line = e->StartupLine();
    if (!line.empty()) log_->Info("{}", line);
  }
  log_->Info("listening on {} (advertised as {}); pool {} MiB in {} at far [{:#x}, {:#x}), granularity {} KiB{}",
             fmt::format("{}:{}", options_.listen_host, port_), Address(), pool_->size() >> 20, shm_name_,
             far_base_, far_base_ + pool_->size(), options_.granularity_bytes >> 10,
             pool_->huge_pages_advised() ? ", huge pages advised" : "");

  if (!options_.rack.empty())
    log_->Info("rack '{}': pool offered to the CPU nodes of tenants {{{}}} (docs/racks.md)", options_.rack,
               fmt::join(options_.rack_tenants, ","));
  PULSE_RETURN_IF_ERROR(ConnectSwitch(options_.connect_timeout));
  // Wait for the switch's verdict: a refused registration (overlapping
  // range, ...) is fatal at start.
  Status s = worker_->RunUntil(
      [this] { return registration_state_ != 0 || stopping() || switch_ep_ == net::kInvalidEndpoint; },
      kRegistrationTimeout);
  if (stopping()) return Status::Unavailable("stopped");
  if (registration_state_ < 0)
    return registration_refusal_;
  if (registration_state_ == 0)
    return Status::Unavailable(fmt::format("the switch at {}:{} did not confirm the registration ({})",
                                           options_.switch_host, options_.switch_port,
                                           s.ok() ? "it disconnected" : s.message()));
  log_->Info("registered with the switch at {}:{}", options_.switch_host, options_.switch_port);
  return Status::Ok();
}

Status MemNodeServer::RestoreAllocations() {
  if (pool_->metadata_size() == 0) return Status::Ok();  // reattach_pool off: nothing recorded
  const size_t journal_bytes = AllocationJournal::BytesFor(pool_->size(), options_.granularity_bytes);
  journal_ = std::make_unique<AllocationJournal>(pool_->metadata(), journal_bytes, pool_->size(),
                                                 options_.granularity_bytes, options_.node);
  store_record_ = std::make_unique<StoreRecord>(pool_->metadata() + journal_bytes,
                                                pool_->metadata_size() - journal_bytes, StoreRecord::kDefaultSlots,
                                                options_.node);
  service_.set_store_record(store_record_.get());
  Result<std::vector<JournalEntry>> entries =
      pool_->reattached() ? journal_->Load() : Result<std::vector<JournalEntry>>(Status::NotFound("fresh pool"));
  if (!entries.ok()) {
    if (pool_->reattached()) {
      log_->Warn("the shared-memory object {} left by a node that died has no allocation journal of this "
                 "configuration; starting with an empty pool", shm_name_);
      pool_->Scrub(0, pool_->size());
    }
    journal_->Format();
    store_record_->Format();
    return Status::Ok();
  }
  if (!store_record_->Recover()) store_record_->Format();
  uint64_t bytes = 0;
  for (const RootEntry& r : journal_->LoadRoots()) roots_[r.slot] = r;
  const auto now = SessionTable::Clock::now();
  for (const JournalEntry& e : *entries) {
    Status s = allocator_->Restore(e.offset, e.length);
    if (s.ok())
      s = service_.AddRange(Range{far_base_ + e.offset, e.length, pool_->data() + e.offset, e.perms, e.tenant});
    // Sessions come back without connections: their clients have the grace
    // to reconnect.
    if (s.ok() && e.lifetime == Lifetime::kSession) sessions_.Restore(e.owner, e.tenant, now);
    if (s.ok()) s = Adopt(far_base_ + e.offset, e.offset, e.length, e.tenant, e.perms, e.lifetime, e.owner,
                          /*journal=*/false);
    if (!s.ok()) return Status::Internal("restoring the allocations of " + shm_name_ + ": " + s.message());
    bytes += e.length;
  }
  if (auto next = sessions_.NextExpiry()) next_expiry_check_ = *next;
  log_->Warn("re-attached the pool {} left by a node that died: {} allocations ({} KiB) and their data kept, "
             "{} STORE-bearing requests recorded",
             shm_name_, entries->size(), bytes >> 10, store_record_->recovered());
  return Status::Ok();
}

Status MemNodeServer::ConnectSwitch(milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  Status last;
  for (int attempt = 0;; ++attempt) {
    if (stopping()) return Status::Unavailable("stopped");
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    Result<net::EndpointId> ep =
        worker_->Connect(options_.switch_host, options_.switch_port, std::min(left, kReconnectAttempt));
    if (ep.ok()) {
      switch_ep_ = *ep;
      SendRegistration();
      return Status::Ok();
    }
    last = ep.status();
    if (last.code() == Status::Code::kInvalidArgument) break;  // a bad address stays bad
    if (attempt == 0) log_->Info("waiting for the switch at {}:{}", options_.switch_host, options_.switch_port);
    // Back off briefly; RequestStop() ends the wait at once.
    (void)worker_->RunUntil([this] { return stopping(); }, std::min(left, milliseconds(100)));
  }
  return Status::Unavailable(fmt::format("cannot reach the switch at {}:{} within {} ms: {}", options_.switch_host,
                                         options_.switch_port, timeout.count(), last.message()));
}

void MemNodeServer::SendRegistration() {
  registration_state_ = 0;
  registration_seq_ = next_seq_++;
  json req = {{"op", "register_memnode"}, {"seq", registration_seq_}, {"node", options_.node},
              {"address", Address()},     {"base", far_base_},         {"size", pool_->size()}};
  // Its frames join the switch's page directory (docs/tier.md).
  if (!options_.rack.empty()) req["rack"] = options_.rack;
  Status s = worker_->Send(switch_ep_, kAmControl, AsBytes(req.dump()));
  if (!s.ok()) log_->Warn("sending register_memnode: {}", s.ToString());
}

void MemNodeServer::MaybeReconnect() {
  if (switch_ep_ != net::kInvalidEndpoint || Clock::now() < next_reconnect_) return;
  Result<net::EndpointId> ep = worker_->Connect(options_.switch_host, options_.switch_port, kReconnectAttempt);
  next_reconnect_ = Clock::now() + kReconnectInterval;
  if (!ep.ok()) {
    log_->Debug("reconnecting to the switch: {}", ep.status().ToString());
    return;
  }
  switch_ep_ = *ep;
  log_->Info("reconnected to the switch at {}:{}", options_.switch_host, options_.switch_port);
  SendRegistration();
}

Status MemNodeServer::Run() {
  while (!stopping()) {
    if (service_.NeedsPoll()) {
      if (Clock::now() >= next_expiry_check_) ReclaimExpiredSessions();
      // Busy: the engine first, so that what the last pass (or the wait)
      // received is admitted and run now and its answers leave at once
      // (before, a request that woke the node waited for one more full
      // network progress: ~0.4 us of queue_wait per request); then one
      // look at the network and the rings per engine slice.
      service_.Poll(send_, options_.engine_budget);
      FlushOutboxes();
      worker_->Progress();
      if (ring_ != nullptr) ring_->Poll();
      (void)PollExtensions();
      // The end of the pass: what it produced leaves now, aggregated.
      FlushOutboxes();
      ConnectPeers();
      continue;
    }
    // Idle engine: the rings are polled for their window before any sleep
    // (one-sided writes wake nobody; RingHost::MaySleep).
    if (ring_ != nullptr && (ring_->Poll() > 0 || !ring_->MaySleep())) {
      // Entries for a hosted service (chain forwards) are worked off
      // there, as the engine's are by the flush below.
      (void)PollExtensions();
      FlushOutboxes();  // what the ring's requests produced
      // Within the window: after a short pure spin (the next entry of a
      // client in a loop comes within it), let a process queued behind us
      // on this core run (a client or the switch), as the Worker's own
      // adaptive polling does.
      if (!worker_->Progress() && options_.worker.yield_while_polling &&
          Clock::now() >= ring_->last_entry() + std::chrono::microseconds(net::kSpinBeforeYieldUs)) {
        sched_yield();
      }
      continue;
    }
    if (PollExtensions()) {
      (void)worker_->Progress();
      continue;
    }
    MaybeReconnect();
    ConnectPeers();
    ReclaimExpiredSessions();
    // Answers handlers produced without engine work (duplicates, unknown
    // programs) leave before the wait.
    FlushOutboxes();
    Clock::time_point deadline = std::min(Clock::now() + kIdleWait, next_expiry_check_);
    if (switch_ep_ == net::kInvalidEndpoint) deadline = std::min(deadline, next_reconnect_);
    Status s = worker_->WaitForEvent(deadline);
    if (!s.ok() && s.code() != Status::Code::kTimeout) {
      log_->Error("waiting for the network: {}", s.ToString());
      return s;
    }
  }
  FlushOutboxes();
  log_->Info("shutting down");
  return Status::Ok();
}

void MemNodeServer::HandleExtensionRequest(MemNodeExtension* e, net::EndpointId from, std::span<const uint8_t> p) {
  const Clock::time_point t0 = Clock::now();
  auto reply = e->HandleFrom(from, p, [this, from](TenantId claimed) {
    return node::CheckTenantClaim(*worker_, from, claimed, "extension").status();
  });
  if (reply) (void)worker_->Send(from, e->reply_am(), std::move(*reply));
  counters_.extension_ns += NanosSince(t0);
}

bool MemNodeServer::PollExtensions() {
  bool more = false;
  for (const auto& e : extensions_) more = e->Poll() || more;
  return more;
}

// ---- network handlers ----------------------------------------------------

void MemNodeServer::OnTraversal(net::EndpointId from, std::span<const uint8_t> payload) {
  counters_.bytes_in += payload.size();
  Result<TraversalMessage> m = DecodeMessage(payload, options_.max_scratch_bytes);
  if (!m.ok()) {
    ++counters_.malformed;
    log_->Debug("malformed traversal message ({} bytes) from connection {}: {}", payload.size(), from,
                m.status().message());
    return;
  }
  Result<node::TraversalSender> sender = node::TraversalSenderOf(*worker_, from, m->tenant);
  if (!sender.ok()) return;  // the connection is gone
  m->tenant = sender->tenant;
  if (!sender->cluster_peer) {
    // A tenant's request is answered to the CPU node its connection named
    // (or names now, if no other identity holds that id), whatever it claims.
    if (std::optional<uint32_t> cpu = peers_.CpuNodeOf(from)) {
      m->cpu_node = *cpu;
    } else if (!peers_.BindCpuNode(m->cpu_node, from)) {
      ++counters_.malformed;
      log_->Debug("request {:#x} from connection {} claims CPU node {}, held by another identity: dropped",
                  m->request_id, from, m->cpu_node);
      return;
    }
  }
  if (m->kind == MessageKind::kResponse && (m->flags & kFlagRedirect) && sender->cluster_peer) {
    // A continuation we sent came back unrun: the switch routes it by the
    // authoritative table.
    ++counters_.redirects_received;
    AddLeg(&*m);
    return SendToSwitch(std::move(m).value());
  }
  if (m->kind == MessageKind::kRequest && !HoldsHere(m->cur_ptr)) {
    // Not ours: the sender's table is stale.  Back unrun, with our version.
    ++counters_.redirects_sent;
    m->kind = MessageKind::kResponse;
    m->status = TraversalStatus::kNotLocal;
    m->flags |= kFlagRedirect;
    m->routing_version = routing_.version();
    m->program.clear();
    AddLeg(&*m);
    std::vector<uint8_t> bytes = EncodeMessage(*m);
    counters_.bytes_out += bytes.size();
    (void)worker_->Send(from, kAmTraversal, std::move(bytes));
    return;
  }
  // A page on the move: the request waits here for the thaw.
  if (m->kind == MessageKind::kRequest && HoldIfFrozen(from, m->cur_ptr, payload)) return;
  service_.Handle(std::move(m).value(), send_);
}

void MemNodeServer::OnBatch(net::EndpointId from, std::span<const uint8_t> payload) {
  Status s = UnpackTraversalBatch(payload, &counters_.batches_in,
                                  [&](std::span<const uint8_t> m) { OnTraversal(from, m); });
  if (!s.ok()) log_->Debug("connection {}: {}", from, s.message());
}

bool MemNodeServer::AdoptRouting(const json& table) {
  Result<RoutingTable> t = RoutingTable::FromJson(table);
  if (!t.ok()) return false;
  const std::vector<RouteEntry> before = routing_.entries();
  if (routing_.Adopt(std::move(t).value())) {
    log_->Debug("routing table version {}", routing_.version());
    // A node whose entry changed (down, up again, a new address) may be a
    // new incarnation without the programs sent to the old one.
    for (const RouteEntry& old : before) {
      const RouteEntry* now = routing_.Find(old.node);
      if (now == nullptr || now->address != old.address || now->alive != old.alive)
        service_.ForgetSentPrograms(old.node);
    }
  }
  AdoptPages(table);
  // Direct routing: the connections to the other memory nodes are opened
  // now, by the event loop (ConnectPeers), not by the first continuation.
  if (routing_mode_ == RoutingMode::kDirect)
    for (const RouteEntry& e : routing_.entries())
      if (e.alive && e.node != options_.node) peers_.Want(e);
  return true;
}

void MemNodeServer::ConnectPeers() {
  if (!peers_.has_wanted()) return;
  for (NodeId node : peers_.ConnectWanted()) service_.ForgetSentPrograms(node);
}

void MemNodeServer::Dispatch(TraversalMessage&& m) {
  AddLeg(&m);  // one message on, whichever way it goes (critical-path accounting)
  // A request that came through a ring is answered in its slot (a "not
  // local" one frees its slot and travels on like any continuation).
  if (ring_ != nullptr && ring_->Route(m)) return;
  if (routing_mode_ != RoutingMode::kDirect || routing_.version() == 0) return SendToSwitch(std::move(m));
  m.routing_version = routing_.version();
  RouteDecision d = RouteNext(
[this](uint64_t addr) { return OwnerOf(addr); }, &m);
  net::EndpointId to = net::kInvalidEndpoint;
  if (d.to == RouteDecision::To::kCpuNode) {
    to = peers_.CpuNode(d.node, m.tenant);
  } else if (const RouteEntry* e = routing_.Find(d.node); e != nullptr && d.node != options_.node) {
    // Only a connection that is open: one to open is the event loop's
    // (ConnectPeers), and this message takes the switch meanwhile.
    Result<net::EndpointId> ep = peers_.Connected(*e);
    if (ep.ok()) to = *ep;
    else log_->Debug("continuation {:#x} to memory node {} through the switch: {}", m.request_id, d.node,
                     ep.status().message());
  }
  // No direct way (the CPU node has no connection here, the next node is
  // down or unreachable): the switch routes it, or answers node_unavailable.
  if (to == net::kInvalidEndpoint) return SendToSwitch(std::move(m));
  // Leaves at the end of this pass (FlushOutboxes), with whatever else the
  // pass produced for `to`.
  (d.to == RouteDecision::To::kCpuNode ? to_cpu_ : to_peers_).Add(to, EncodeMessage(m), m.request_id);
}

void MemNodeServer::SendToSwitch(TraversalMessage&& message) {
  if (switch_ep_ == net::kInvalidEndpoint) {
    ++counters_.responses_dropped;
    return;
  }
  to_switch_.Add(switch_ep_, EncodeMessage(message), message.request_id);
}

void MemNodeServer::FlushOutboxes() {
  if (to_cpu_.empty() && to_peers_.empty() && to_switch_.empty()) return;
  const Clock::time_point t0 = Clock::now();
  // A direct send that fails (the connection went down since the message
  // was routed) goes to the switch, as the same bytes: the switch routes it
  // by the authoritative table, or answers node_unavailable.
  const Outbox::FailedFn via_switch = [this](net::EndpointId to, Outbox::Entry&& e, const Status& why) {
    log_->Debug("traversal message {:#x} to connection {} through the switch: {}", e.tag, to, why.message());
    if (switch_ep_ == net::kInvalidEndpoint) {
      ++counters_.responses_dropped;
      return;
    }
    to_switch_.Add(switch_ep_, std::move(e.bytes), e.tag);
  };
  to_cpu_.Flush(via_switch);
  to_peers_.Flush(via_switch);
  to_switch_.Flush([this](net::EndpointId, Outbox::Entry&& e, const Status& why) {
    ++counters_.responses_dropped;
    log_->Debug("response {:#x} not sent to the switch: {}", e.tag, why.ToString());
  });
  counters_.send_ns += NanosSince(t0);
}

void MemNodeServer::OnDisconnect(net::EndpointId ep, const Status& why) {
  if (ring_ != nullptr) ring_->Close(ep);
  if (ep == switch_ep_) {
    log_->Warn("lost the switch: {}; reconnecting every {} ms", why.message(), kReconnectInterval.count());
    switch_ep_ = net::kInvalidEndpoint;
    next_reconnect_ = Clock::now() + kReconnectInterval;
  } else {
    log_->Debug("connection {} closed: {}", ep, why.message());
  }
  if (std::optional<NodeId> memnode = peers_.OnDisconnect(ep)) service_.ForgetSentPrograms(*memnode);
  for (const auto& e : extensions_) e->OnDisconnect(ep);
  // Its sessions' leases start running out.
  sessions_.Detach(ep, Clock::now());
  if (auto next = sessions_.NextExpiry()) next_expiry_check_ = std::min(next_expiry_check_, *next);
  (void)worker_->Close(ep);
}

void MemNodeServer::OnControlReply(net::EndpointId from, std::span<const uint8_t> payload) {
  json reply = json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
  if (from != switch_ep_ || !reply.is_object()) return;
  auto seq = reply.find("seq");
  if (seq == reply.end() || !seq->is_number_unsigned() || seq->get<uint64_t>() != registration_seq_) return;
  registration_refusal_ = ControlReplyStatus(reply, "the switch refused the registration");
  registration_state_ = registration_refusal_.ok() ? 1 : -1;
  if (registration_refusal_.ok()) {
    // A switch that names no routing routes every message itself.
    routing_mode_ = RoutingMode::kSwitch;
    if (auto mode = reply.find("routing"); mode != reply.end() && mode->is_string()) {
      Result<RoutingMode> parsed = ParseRoutingMode(mode->get<std::string>(), "register_memnode answer");
      if (parsed.ok()) routing_mode_ = *parsed;
    }
    // A restarted switch counts its versions from 0 again.
    routing_ = RoutingTable();
    pages_.Reset();
    if (auto table = reply.find("table"); table != reply.end() && !AdoptRouting(*table))
      log_->Warn("the switch answered register_memnode with a malformed routing table");
    log_->Info("routing: {} (table version {})", RoutingModeName(routing_mode_), routing_.version());
  }
  if (!registration_refusal_.ok()) log_->Error("{}", registration_refusal_.ToString());
}

void MemNodeServer::OnControl(net::EndpointId from, std::span<const uint8_t> payload) {
  ++counters_.control_ops;
  json seq;
  Result<node::ControlRequest> req = node::ParseControl(payload, &seq);
  Result<json> answer = json::object();
  bool shutdown = false;
  // A re-sent or duplicated alloc/free/unlock gets its first answer.
  const Result<json>* replayed = req.ok() ? control_replay_.Find(from, req->op, seq) : nullptr;
  if (replayed != nullptr) {
    answer = *replayed;
  } else if (!req.ok()) {
    answer = req.status();
  } else {
    const std::string& op = req->op;
    if (op == "hello") {
      // A CPU node names itself: its final responses may come here directly.
      if (auto cpu = req->body.find("cpu_node"); cpu != req->body.end() && cpu->is_number_unsigned() &&
                                                 cpu->get<uint64_t>() <= UINT32_MAX)
        if (!peers_.BindCpuNode(cpu->get<uint32_t>(), from))
          log_->Warn("connection {} named CPU node {}, which another identity holds: not bound", from,
                     cpu->get<uint32_t>());
      answer = Hello();
      if (answer.ok()) AddRackFields(from, req->body, &answer.value());
    } else if (op == "alloc") {
      answer = Alloc(from, req->body);
    } else if (op == "free") {
      answer = Free(from, req->body);
    } else if (op == "lock" || op == "lock_renew" || op == "unlock") {
      answer = LockOp(from, op, req->body);
    } else if (auto memory = MemoryOp(from, op, req->body)) {
      answer = std::move(*memory);
    } else if (auto moved = PageMoveOp(from, op, req->body)) {
      answer = std::move(*moved);
    } else if (op == "stats") {
      answer = json{{"role", "memnode"}, {"node", options_.node}, {"instance", options_.instance_id},
                    {"insecure", worker_->open()}, {"counters", Stats()}};
    } else if (op == "shutdown") {
      Status allowed = node::RequireClusterPeer(*worker_, from, op);
      shutdown = allowed.ok();
      if (shutdown) log_->Info("shutdown requested by connection {}", from);
      if (!shutdown) answer = allowed;
    } else {
      answer = Status::InvalidArgument(fmt::format("control: unknown op '{}'", op));
    }
    control_replay_.Remember(from, op, seq, answer);
  }
  if (!node::SendControlReply(*worker_, from, seq, std::move(answer), *log_)) ++counters_.control_errors;
  // The reply is queued first; the Worker flushes it when closing.
  if (shutdown) stop_.store(true, std::memory_order_release);
}

// ---- control operations --------------------------------------------------

Result<json> MemNodeServer::Hello() {
  json reply{{"node", options_.node},
              {"base", far_base_},
              {"size", pool_->size()},
              {"granularity", allocator_->granularity()}};
  for (const auto& e : extensions_) e->AddHelloFields(&reply);
  if (calibration_.t_d_ns > 0) {
    reply["t_i_ns"] = calibration_.t_i_ns;
    reply["t_d_ns"] = calibration_.t_d_ns;
  }
  return reply;
}

void MemNodeServer::AddRackFields(net::EndpointId from, const json& body, json* reply) const {
  if (options_.rack.empty()) return;
  (*reply)["rack"] = options_.rack;
  // Only to a tenant the pool is shared with (docs/racks.md, docs/security.md).
  Result<TenantId> tenant = node::RequestTenant(*worker_, from, body, "hello");
  if (tenant.ok() && options_.rack_tenants.count(*tenant) > 0)
    (*reply)["rack_pool"] = rack::OfferToJson(pool_->Offer(options_.rack));
}

Result<json> MemNodeServer::Alloc(net::EndpointId from, const json& body) {
  // "bytes must be positive" covers a missing, zero or negative count.
  auto bytes_field = body.find("bytes");
  if (bytes_field == body.end() || !bytes_field->is_number_integer() ||
      (!bytes_field->is_number_unsigned() && bytes_field->get<int64_t>() <= 0))
    return Status::InvalidArgument("alloc: bytes must be positive");
  const uint64_t bytes = bytes_field->get<uint64_t>();
  Result<uint32_t> tenant = node::RequestTenant(*worker_, from, body, "alloc");
  if (!tenant.ok()) return tenant.status();
  uint8_t perms = kPermReadWrite;
  if (auto p = body.find("perms"); p != body.end()) {
    if (*p == "rw") {
      perms = kPermReadWrite;
    } else if (*p == "r") {
      perms = kPermRead;
    } else {
      return Status::InvalidArgument("alloc: perms must be \"rw\" or \"r\"");
    }
  }
  // Durable under a root, or the session's.
  Lifetime lifetime = Lifetime::kSession;
  uint64_t owner = 0;
  if (body.contains("root")) {
    PULSE_ASSIGN_OR_RETURN(std::string root, node::GetString(body, "root", "alloc"));
    PULSE_ASSIGN_OR_RETURN(uint32_t slot, FindRoot(*tenant, root, /*create=*/true, "alloc"));
    lifetime = Lifetime::kDurable;
    owner = slot;
  } else {
    PULSE_ASSIGN_OR_RETURN(owner, RequestSession(from, *tenant, body, "alloc"));
  }
  Result<Allocation> a = allocator_->Allocate(bytes);
  if (!a.ok()) return a.status();
  Range range{far_base_ + a->offset, a->length, pool_->data() + a->offset, perms, *tenant};
  Status s = service_.AddRange(range);
  if (!s.ok()) {  // cannot happen while the allocator and the table agree
    (void)allocator_->Free(a->offset);
    return Status::Internal("alloc: " + s.message());
  }
  s = Adopt(range.base, a->offset, a->length, *tenant, perms, lifetime, owner, /*journal=*/true);
  if (!s.ok()) {
    Reclaim(a->offset);
    return s;
  }
  log_->Debug("alloc {} bytes for tenant {}: [{:#x}, +{})", bytes, *tenant, range.base, range.length);
  return KeyJson(a->offset);
}

Result<json> MemNodeServer::Free(net::EndpointId from, const json& body) {
  Result<uint64_t> base = node::GetU64(body, "base", "free");
  if (!base.ok()) return base.status();
  Result<uint32_t> tenant = node::RequestTenant(*worker_, from, body, "free");
  if (!tenant.ok()) return tenant.status();
  PULSE_RETURN_IF_ERROR(PageMovedAway(*base, "free"));
  const Range* range = table_.Find(*base);
  if (range == nullptr || range->base != *base || owned_.count(PoolOffsetOf(*range)) == 0)
    return Status::NotFound(fmt::format("free: no allocation starts at {:#x} on node {}", *base, options_.node));
  if (range->owner != *tenant)
    return Status::PermissionDenied(
        fmt::format("free: the range at {:#x} belongs to tenant {}, not {}", *base, range->owner, *tenant));
  const uint64_t length = Reclaim(PoolOffsetOf(*range));
  log_->Debug("free [{:#x}, +{}) of tenant {}", *base, length, *tenant);
  return json::object();
}

Result<json> MemNodeServer::LockOp(net::EndpointId from, const std::string& op, const json& body) {
  Result<uint64_t> addr = node::GetU64(body, "addr", op);
  if (!addr.ok()) return addr.status();
  Result<uint32_t> tenant = node::RequestTenant(*worker_, from, body, op);
  if (!tenant.ok()) return tenant.status();
  Result<uint64_t> holder = node::GetU64(body, "holder", op);
  if (!holder.ok()) return holder.status();
  // A lock is named by an address of the tenant's own memory: nobody can
  // block another tenant's locks.  Its page may be moving (Aborted: the
  // client follows the directory).
  PULSE_RETURN_IF_ERROR(PageMovedAway(*addr, op));
  const Range* range = table_.Find(*addr);
  if (range == nullptr)
    return Status::NotFound(fmt::format("{}: {:#x} is in no allocation of node {}", op, *addr, options_.node));
  if (range->owner != *tenant)
    return Status::PermissionDenied(
        fmt::format("{}: {:#x} belongs to tenant {}, not {}", op, *addr, range->owner, *tenant));
  const auto now = LockTable::Clock::now();
  if (op == "unlock") {
    PULSE_RETURN_IF_ERROR(locks_.Release(*addr, *holder, now));
    return json::object();
  }
  Result<uint64_t> lease = node::GetU64(body, "lease_ms", op);
  if (!lease.ok()) return lease.status();
  if (*lease == 0 || *lease > 3600 * 1000)
    return Status::InvalidArgument(fmt::format("{}: lease_ms must be in [1, 3600000]", op));
  const std::chrono::milliseconds ms(*lease);
  if (op == "lock_renew") {
    PULSE_RETURN_IF_ERROR(locks_.Renew(*addr, *holder, ms, now));
    return json::object();
  }
  Result<std::string> mode = node::GetString(body, "mode", op);
  if (!mode.ok()) return mode.status();
  if (*mode != "shared" && *mode != "exclusive")
    return Status::InvalidArgument("lock: mode must be \"shared\" or \"exclusive\"");
  return json{{"granted", locks_.TryAcquire(*addr, *holder, *mode == "exclusive", ms, now)}};
}

json MemNodeServer::AggregationJson() const {
  json j = InboundJson(counters_.batches_in);
  j["responses"] = OutboxJson(to_cpu_.counters());
  j["continuations"] = OutboxJson(to_peers_.counters());
  j["to_switch"] = OutboxJson(to_switch_.counters());
  return j;
}

json MemNodeServer::Stats() const {
  const MemNodeCounters& c = service_.counters();
  // CPU time of the whole process (engine, fabric, control): the benchmarks'
  // memory-node CPU per operation.
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const uint64_t cpu_us = static_cast<uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                          static_cast<uint64_t>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  const std::vector<PipelineLoad> loads = service_.pipeline_loads();
  uint64_t prefetches_issued = 0, prefetches_ignored = 0;
  for (const PipelineLoad& l : loads) {
    prefetches_issued += l.prefetches_issued;
    prefetches_ignored += l.prefetches_ignored;
  }
  json stats{{"cpu_us", cpu_us},
              {"requests", c.requests},
              {"responses", c.responses},
              {"iterations", c.iterations},
              {"not_local", c.not_local},
              {"faults", c.faults},
              {"bad_requests", c.bad_requests},
              {"unknown_programs", c.unknown_programs},
              {"duplicates", c.duplicates},
              {"durable_answers", c.durable_answers},
              {"outcome_unknown", c.outcome_unknown},
              {"programs_cached", c.programs_cached},
              {"continuations_with_code", c.continuations_with_code},
              {"continuations_by_hash", c.continuations_by_hash},
              {"malformed", counters_.malformed},
              {"responses_dropped", counters_.responses_dropped},
              {"bytes_in", counters_.bytes_in},
              {"bytes_out", counters_.bytes_out + to_cpu_.counters().bytes + to_peers_.counters().bytes +
                                to_switch_.counters().bytes},
              {"control_ops", counters_.control_ops},
              {"control_errors", counters_.control_errors},
              {"locks_held", locks_.size()},
              {"lock_leases_expired", locks_.expired_leases()},
              {"engine_active", service_.active()},
              {"engine_capacity", service_.capacity()},
              {"engine_queued", service_.queued()},
              {"pipelines", PipelineLoadsJson(loads)},
              {"prefetches_issued", prefetches_issued},
              {"prefetches_ignored", prefetches_ignored},
              {"pool_bytes", allocator_->capacity()},
              {"pool_used", allocator_->used()},
              {"pool_free", allocator_->free_bytes()},
              {"pool_largest_free", allocator_->largest_free()},
              {"allocations", allocator_->allocations()},
              {"tenants", TenantUse()},
              {"sessions", sessions_.size()},
              {"sessions_expired", sessions_.expired()},
              {"session_grace_ms", sessions_.grace().count()},
              {"roots", roots_.size()},
              {"switch_connected", switch_ep_ != net::kInvalidEndpoint},
              {"routing", RoutingModeName(routing_mode_)},
              {"routing_version", routing_.version()},
              {"tier_version", pages_.version()},
              {"page_moves", PageMovesJson()},
              {"direct_continuations", to_peers_.counters().carried},
              {"direct_responses", to_cpu_.counters().carried},
              {"switch_sends", to_switch_.counters().carried},
              {"aggregation", AggregationJson()},
              {"redirects_sent", counters_.redirects_sent},
              {"redirects_received", counters_.redirects_received},
              {"peer_connections", peers_.memnode_connections()},
              {"legs_ns",
               {{"handle", counters_.handle_ns},
                {"queue_wait", c.queue_wait_ns},
                {"engine", c.engine_ns},
                {"send", counters_.send_ns},
                {"extension", counters_.extension_ns}}},
              {"cpu_seconds", node::ProcessCpuSeconds()},
              {"net", node::NetCountersJson(worker_->counters())}};
  if (ring_ != nullptr)
    stats["ring"] = ring_->Stats(*worker_, [this](net::EndpointId ep) { return peers_.CpuNodeOf(ep); });
  for (const auto& e : extensions_) stats[e->stats_key()] = e->Stats();
  return stats;
}

}  // namespace pulse::memnode
