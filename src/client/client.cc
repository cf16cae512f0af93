// The CPU-node client: a façade over its parts in src/client/ —
// Connections (the switch, the memory nodes, membership and recovery),
// OneSidedAccess (reads and writes, the cache), FarAllocator, LocalExecution
// (traversals run here), TraversalTracker (offloaded traversals: the state
// machine), LockCalls, and the EventLoop every wait runs (shared with layers
// above, client_internal.h).
#include "pulse/client.h"

#include <cstdlib>
#include <random>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/client_internal.h"
#include "client/connections.h"
#include "client/event_loop.h"
#include "client/far_allocator.h"
#include "client/lifetimes.h"
#include "client/local_execution.h"
#include "client/locks.h"
#include "client/one_sided.h"
#include "client/ring_sender.h"
#include "client/traversal_tracker.h"
#include "pulse/cluster.h"
#include "pulse/protocol.h"

namespace pulse {

using nlohmann::json;

bool DispatchPolicy::ShouldOffload(uint32_t longest_path) const {
  switch (mode) {
    case ExecutionMode::kOffload: return true;
    case ExecutionMode::kCpuNode: return false;
    case ExecutionMode::kAuto: break;
  }
  return t_i_ns * longest_path < eta * t_d_ns;
}

namespace {
// Request ids must not repeat across clients that get the same CPU node id
// from different switch lifetimes (memory nodes remember STORE-bearing
// ids): each client starts its counter at a random point.
uint64_t RandomCounter() { return (std::random_device{}() | (uint64_t{std::random_device{}()} << 32)) >> 25; }
}  // namespace

// The parts, and the traversal state machine's view of them.
struct Client::Impl final : TraversalPath {
  explicit Impl(const ClientOptions& o) : options(o) {}
  // A clean end: the session's memory is reclaimed now, not after its lease.
  ~Impl() override {
    if (connections.worker != nullptr && connections.control != nullptr) lifetimes.EndSession();
  }

  ClientOptions options;  // dispatch: with the cluster's calibration
  ClientCounters counters;
  Connections connections{options, counters};
  ClientLifetimes lifetimes{&connections, [this](MemNode& n) { return access.EnsureNode(n); }};
  OneSidedAccess access{&connections, &counters, &lifetimes};
  std::unique_ptr<FarAllocator> allocator;
  std::unique_ptr<LocalExecution> local;
  LockCalls locks{&connections};
  TraversalTracker traversals{&options, this, &counters, &TrackerClock::Steady(), RandomCounter()};
  std::unique_ptr<RingSender> rings;  // the ring request path (request_path)
  std::unique_ptr<EventLoop> loop;

  // TraversalPath.
  // Both sends queue the message (Connections::QueueTraversal): it leaves
  // with the others of this turn when the event loop next runs.  A
  // connection already known to have failed is refused here, as before.
  Status SendToSwitch(const TraversalMessage& m) override {
    if (!connections.worker->IsConnected(connections.switch_ep)) {
      connections.switch_down = true;  // before its disconnect handler runs
      return Status::Unavailable("client: the switch connection has failed");
    }
    connections.QueueTraversal(connections.switch_ep, EncodeMessage(m), m.request_id);
    ++counters.switch_sends;
    return Status::Ok();
  }
  Status Send(const TraversalMessage& m) override {
    // The owner's ring if this connection has one (request_path).
    if (rings != nullptr && rings->TrySend(m)) return Status::Ok();
    // Direct: straight to the owner over the connection we already have (a
    // lost one is re-made outside network handlers: TraverseAsync); the
    // switch when there is none.
    MemNode* n = connections.routing == RoutingMode::kDirect ? connections.NodeFor(m.cur_ptr) : nullptr;
    if (n != nullptr && !n->lost && connections.worker->IsConnected(n->ep)) {
      connections.QueueTraversal(n->ep, EncodeMessage(m), m.request_id);
      ++counters.direct_sends;
      return Status::Ok();
    }
    return SendToSwitch(m);
  }
  uint32_t routing_version() const override { return connections.routing_table.version(); }
  void RefreshTable(uint32_t seen) override {
    // Once per newer version: the redirects of one stale table come in bursts.
    if (seen <= table_asked_for_ || !connections.worker->IsConnected(connections.switch_ep)) return;
    table_asked_for_ = seen;
    if (connections.worker->Send(connections.switch_ep, kAmRouting, std::span<const uint8_t>()).ok()) ++counters.table_refreshes;
  }
  uint32_t table_asked_for_ = 0;  // the newest version RefreshTable asked the switch for
  std::optional<uint32_t> NodeOf(uint64_t addr) const override {
    const MemNode* n = connections.NodeFor(addr);
    if (n == nullptr) return std::nullopt;
    return n->id;
  }
  // Under direct routing the switch is off the data path: its loss holds up
  // no traversal (a fall-back send to it fails and is retried like any).
  bool switch_down() const override {
    return connections.switch_down && connections.routing != RoutingMode::kDirect;
  }
  Status EnsureSwitch() override { return connections.EnsureSwitch(); }
  bool Unrouted(uint32_t node) const override { return connections.unrouted.count(node) > 0; }
  uint32_t cpu_node() const override { return connections.cpu_node; }
  void StoresDone() override {
    if (access.caching()) (void)access.cache()->Invalidate();
    if (LockTier* l = access.lock_tier()) l->DropCache();
  }

  // A kAmBatch envelope of responses: each handled as if it came alone; a
  // malformed envelope is counted and dropped whole (its requests time out
  // and are re-sent).
  void OnBatch(std::span<const uint8_t> payload) {
    // Counted in batches_in either way (see above).
    IgnoreError(UnpackTraversalBatch(payload, &batches_in,
                                     [this](std::span<const uint8_t> m) { traversals.OnMessage(m); }));
  }

  Status Open();

  InboundBatches batches_in;  // copied into counters by counters()
};

Status Client::Impl::Open() {
  PULSE_RETURN_IF_ERROR(connections.Open());
  loop = std::make_unique<EventLoop>(connections.worker.get());
  Impl* raw = this;
  loop->SetFlush([raw] { raw->connections.FlushTraversals(); });
  loop->Add(&traversals);
  connections.worker->SetHandler(kAmTraversal, [raw](net::EndpointId, std::span<const uint8_t> payload) {
    raw->traversals.OnMessage(payload);
  });
  connections.worker->SetHandler(kAmBatch, [raw](net::EndpointId, std::span<const uint8_t> payload) {
    raw->OnBatch(payload);
  });
  PULSE_ASSIGN_OR_RETURN(RequestPath path, EffectiveRequestPath(options));
  rings = std::make_unique<RingSender>(&connections, &counters,
                                       [raw](std::span<const uint8_t> m) { raw->traversals.OnMessage(m); });
  PULSE_ASSIGN_OR_RETURN(RingLayout layout, EffectiveRingLayout(options));
  rings->Open(path, layout, options.ring_slots, options.ring_slot_bytes);
  loop->Add(rings.get());
  connections.worker->SetHandler(kAmRouting, [raw](net::EndpointId from, std::span<const uint8_t> payload) {
    if (from == raw->connections.switch_ep) raw->connections.AdoptPushedTable(payload);
  });
  connections.worker->SetDisconnectHandler([raw](net::EndpointId ep, const Status&) {
    raw->rings->OnDisconnect(ep);
    // At the next timer check: sent again once the switch is back, or failed.
    // Under direct routing a lost memory node held requests too: they are
    // re-sent (through the switch until it is reconnected).
    if (raw->connections.OnDisconnect(ep) || raw->connections.routing == RoutingMode::kDirect)
      raw->traversals.OnSwitchLost();
  });
  if (options.cache.bytes > 0) PULSE_RETURN_IF_ERROR(access.EnableCache(options.cache));
  // The cache keeps writes and reads under locks already (LockTierOptions).
  if (options.cache.bytes == 0 && (options.lock_tier.write_buffer || options.lock_tier.page_cache))
    access.EnableLockTier(options.lock_tier, options.hotness);
  allocator = std::make_unique<FarAllocator>(
      options.policy, options.slab_bytes, static_cast<uint32_t>(connections.nodes.size()),
      [raw](uint32_t node, uint64_t bytes) -> Result<std::pair<uint64_t, uint64_t>> {
        Connections& c = raw->connections;
        PULSE_RETURN_IF_ERROR(raw->access.EnsureNode(c.nodes[node]));
        // A full pool arrives as ResourceExhausted.
        json request{{"op", "alloc"}, {"bytes", bytes}, {"perms", "rw"}};
        raw->lifetimes.TagAlloc(&request);
        PULSE_ASSIGN_OR_RETURN(json r, c.control->Call(c.nodes[node].ep, std::move(request), c.rma_timeout()));
        raw->lifetimes.NoteAllocation(c.nodes[node].id);
        // The answer carries the allocation's key: no "key" call later.
        PULSE_RETURN_IF_ERROR(raw->access.AddKey(c.nodes[node], r));
        return std::make_pair(r["base"].get<uint64_t>(), r["length"].get<uint64_t>());
      },
      // Where the page directory puts an address now (pages move).
      [raw](uint64_t addr) -> std::optional<uint32_t> {
        const MemNode* n = raw->connections.NodeFor(addr);
        if (n == nullptr) return std::nullopt;
        return n->id;
      });
  local = std::make_unique<LocalExecution>(&connections, &access, allocator.get(), &counters);
  const char* rack_env = std::getenv("PULSE_RACK");  // docs/racks.md
  access.UseRackTier(!options.rack.empty() ? options.rack : rack_env != nullptr ? rack_env : "", allocator.get());
  return Status::Ok();
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  // A peer's answer missing a field or with a field of the wrong type is an
  // error of the peer, reported as a value.
  PULSE_RETURN_IF_ERROR(options.hotness.Validate());  // ClientOptions::hotness
  PULSE_RETURN_IF_ERROR(CheckLockTierOptions(options.lock_tier));
  try {
    auto impl = std::make_unique<Impl>(options);
    PULSE_RETURN_IF_ERROR(impl->Open());
    return std::unique_ptr<Client>(new Client(std::move(impl)));
  } catch (const std::exception& e) {  // nlohmann::json type errors, std::stoul on bad hex
    return Status::InvalidArgument(fmt::format("cluster answered a malformed hello: {}", e.what()));
  }
}

uint32_t Client::memory_nodes() const { return static_cast<uint32_t>(impl_->connections.nodes.size()); }
uint32_t Client::cpu_node() const { return impl_->connections.cpu_node; }
std::optional<uint32_t> Client::NodeOf(uint64_t addr) const { return impl_->NodeOf(addr); }

Result<uint64_t> Client::Allocate(uint64_t bytes, std::optional<uint32_t> node) {
  return impl_->allocator->Allocate(bytes, node);
}
Status Client::Free(uint64_t addr) { return impl_->allocator->Free(addr); }

Status Client::PublishRoot(const std::string& name, uint64_t addr) {
  if (Status s = FlushCache(); !s.ok()) return s;
  return impl_->lifetimes.PublishRoot(name, addr);
}
Result<uint64_t> Client::OpenRoot(const std::string& name) { return impl_->lifetimes.OpenRoot(name); }
Status Client::DropRoot(const std::string& name) {
  PULSE_RETURN_IF_ERROR(InvalidateCache());
  return impl_->lifetimes.DropRoot(name);
}
uint64_t Client::session() const { return impl_->lifetimes.session(); }

Status Client::Read(uint64_t addr, void* dst, size_t length) { return impl_->access.Read(addr, dst, length); }
Status Client::Write(uint64_t addr, const void* src, size_t length) { return impl_->access.Write(addr, src, length); }
Status Client::FlushCache() { return impl_->access.caching() ? impl_->access.cache()->Flush() : Status::Ok(); }
Status Client::InvalidateCache() {
  return impl_->access.caching() ? impl_->access.cache()->Invalidate() : Status::Ok();
}

Result<bool> Client::TryLock(uint64_t lock_addr, uint64_t holder, bool exclusive, std::chrono::milliseconds lease) {
  return impl_->locks.TryLock(lock_addr, holder, exclusive, lease);
}
Status Client::RenewLock(uint64_t lock_addr, uint64_t holder, std::chrono::milliseconds lease) {
  return impl_->locks.Renew(lock_addr, holder, lease);
}
Status Client::Unlock(uint64_t lock_addr, uint64_t holder) { return impl_->locks.Unlock(lock_addr, holder); }
void Client::EnterLock(bool exclusive) {
  if (LockTier* l = impl_->access.lock_tier()) l->Enter(exclusive);
}
Status Client::LeaveLock(bool exclusive) {
  LockTier* l = impl_->access.lock_tier();
  return l != nullptr ? l->Leave(exclusive) : Status::Ok();
}
void Client::AbandonLock(bool exclusive) {
  if (LockTier* l = impl_->access.lock_tier()) l->Abandon(exclusive);
}

void Client::TraverseAsync(const ProgramRef& program, uint64_t cur_ptr, std::vector<uint8_t> scratch,
                           const TraverseOptions& options, TraverseCallback done) {
  Impl& im = *impl_;
  ++im.counters.traversals;
  DispatchPolicy policy = im.options.dispatch;
  if (options.mode) policy.mode = *options.mode;
  if (!policy.ShouldOffload(program->info().longest_path)) {
    im.traversals.Post(std::move(done), im.local->Run(*program, cur_ptr, std::move(scratch), options));
    return;
  }
  // The memory nodes must see the writes buffered under a lock.
  if (LockTier* l = im.access.lock_tier(); l != nullptr) {
    if (Status s = l->Drain(); !s.ok()) {
      im.traversals.Post(std::move(done), s);
      return;
    }
  }
  uint32_t iterations_here = 0;
  if (im.access.caching() || im.access.rack_tier()) {
    // Run here while the windows are in the rack pool or cached; offload
    // from the first one that is not.
    auto ran = im.local->RunWhileLocal(*program, cur_ptr, std::move(scratch), options);
    if (auto* finished = std::get_if<TraversalResult>(&ran)) {
      im.traversals.Post(std::move(done), std::move(*finished));
      return;
    }
    auto& stopped = std::get<LocalExecution::Stopped>(ran);
    cur_ptr = stopped.cur_ptr;
    scratch = std::move(stopped.scratch);
    iterations_here = stopped.iterations;
    // The memory nodes must see this CPU node's writes.
    if (Status s = im.access.caching() ? im.access.cache()->Flush() : Status::Ok(); !s.ok()) {
      im.traversals.Post(std::move(done), s);
      return;
    }
  }
  ++im.counters.offloaded;
  im.access.OnOffload(cur_ptr, program->info().has_store);
  Status reachable =
      im.connections.routing == RoutingMode::kDirect ? Status::Ok() : im.connections.EnsureSwitch();
  if (reachable.ok() && !im.connections.unrouted.empty()) reachable = im.connections.CheckRouted(cur_ptr);
  if (!reachable.ok()) {
    im.traversals.Post(std::move(done), Status::Unavailable(reachable.message()));
    return;
  }
  if (im.connections.routing == RoutingMode::kDirect) {
    // Re-make a lost connection to the first node here, outside network
    // handlers; if that fails the request goes through the switch.
    if (MemNode* first = im.connections.NodeFor(cur_ptr); first != nullptr) IgnoreError(im.access.EnsureNode(*first));
  }
  im.traversals.Start(program, cur_ptr, std::move(scratch), iterations_here, options, std::move(done));
}

Result<TraversalResult> Client::Traverse(const ProgramRef& program, uint64_t cur_ptr, std::vector<uint8_t> scratch,
                                         const TraverseOptions& options) {
  std::optional<Result<TraversalResult>> out;
  TraverseAsync(program, cur_ptr, std::move(scratch), options,
                [&out](Result<TraversalResult> r) { out.emplace(std::move(r)); });
  // The retry budget bounds the wait; the extra second covers re-issues.
  const auto budget = impl_->options.request_timeout * (impl_->options.max_attempts + 1) + std::chrono::seconds(1);
  for (;;) {
    Status s = impl_->loop->DriveUntil([&] { return out.has_value(); },
                                       std::chrono::duration_cast<std::chrono::milliseconds>(budget));
    if (out) return std::move(*out);
    if (!s.ok() && impl_->traversals.pending() == 0) return s;  // cannot happen: every pending one times out
  }
}

void Client::Poll() { impl_->loop->Poll(); }

Status Client::WaitAll(std::chrono::milliseconds timeout) {
  TraversalTracker& t = impl_->traversals;
  Status s = impl_->loop->DriveUntil([&] { return t.pending() == 0 && !t.has_ready(); }, timeout);
  if (!s.ok()) return Status::Timeout(fmt::format("client: {} traversals still pending", t.pending()));
  return s;
}

size_t Client::pending() const { return impl_->traversals.pending(); }

Status Client::Ping(uint64_t addr) {
  Impl& im = *impl_;
  bool finished = false, answered = false;
  PULSE_RETURN_IF_ERROR(im.connections.EnsureSwitch());
  PULSE_RETURN_IF_ERROR(im.traversals.StartPing(addr, [&](Result<TraversalResult> r) {
    finished = true;
    if (r.ok()) answered = r.value().status == TraversalStatus::kDone;
  }));
  // Its only error is a timeout, which `finished` tells too.
  IgnoreError(im.loop->DriveUntil([&] { return finished; }, im.options.request_timeout * 2));
  if (!finished) return Status::Timeout("ping: no answer");
  return answered ? Status::Ok() : Status::Unavailable("ping: failed");
}

const DispatchPolicy& Client::dispatch_policy() const { return impl_->options.dispatch; }
void Client::SetDispatchPolicy(const DispatchPolicy& policy) { impl_->options.dispatch = policy; }
const ClientCounters& Client::counters() const {
  impl_->counters.control_retransmissions = impl_->connections.control->retransmissions();
  impl_->counters.request_messages = impl_->connections.outbox->counters().messages;
  impl_->counters.requests_carried = impl_->connections.outbox->counters().carried;
  impl_->counters.envelopes_in = impl_->batches_in.envelopes;
  impl_->counters.responses_in_envelopes = impl_->batches_in.carried;
  impl_->counters.malformed_envelopes = impl_->batches_in.malformed;
  if (LockTier* l = impl_->access.lock_tier()) {
    impl_->counters.lock_cache_hits = l->cache_counters().cache_hits;
    impl_->counters.lock_cache_misses = l->cache_counters().cache_misses;
  }
  return impl_->counters;
}
const net::Counters& Client::net_counters() const { return impl_->connections.worker->counters(); }
TenantId Client::tenant() const { return impl_->options.tenant; }

// ---- client_internal.h ------------------------------------------------------

net::Worker& ClientInternal::worker(Client& client) { return *client.impl_->connections.worker; }

net::EndpointId ClientInternal::memnode_endpoint(const Client& client, uint32_t node) {
  return client.impl_->connections.LiveEndpoint(node);
}

net::EndpointId ClientInternal::switch_endpoint(const Client& client) {
  const Connections& c = client.impl_->connections;
  return c.switch_down ? net::kInvalidEndpoint : c.switch_ep;
}

EventLoop& ClientInternal::loop(Client& client) { return *client.impl_->loop; }

uint64_t ClientInternal::ring_stores(const Client& client) { return client.impl_->rings->ring_stores(); }

uint32_t ClientInternal::routing_version(const Client& client) {
  return client.impl_->connections.routing_table.version();
}

}  // namespace pulse
