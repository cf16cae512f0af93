// The CPU-node client.  Traversal requests carry a request id, a per-attempt
// timer and a retry budget; the program travels by content hash once a
// memory node has it.  Completion callbacks are queued and run outside the
// fabric's handlers, so a callback may start (or wait for) new work.
#include "pulse/client.h"

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/cache.h"
#include "client/far_allocator.h"
#include "protocol/control_client.h"
#include "pulse/cluster.h"
#include "pulse/protocol.h"

namespace pulse {

using Clock = std::chrono::steady_clock;
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

struct MemNode {
  uint32_t id = 0;
  std::string address;
  uint64_t base = 0;
  uint64_t size = 0;
  net::EndpointId ep = net::kInvalidEndpoint;
  net::RemoteKey rkey;
  uint64_t remote_base = 0;
  bool lost = false;  // the connection failed; EnsureNode reconnects
};

struct Pending {
  ProgramRef program;
  TraversalMessage request;  // as last sent
  TraverseOptions options;
  Client::TraverseCallback done;
  Clock::time_point deadline;
  uint32_t attempts = 0;
  TraversalResult result;    // issues / retransmissions so far
  // Riding out an unavailable memory node (ClientOptions::ride_out_unavailable):
  // when the first "unavailable" answer came plus the ride-out time, and
  // whether the deadline is the next re-send rather than a lost attempt.
  Clock::time_point unavailable_until{};
  bool resend_when_due = false;
};

}  // namespace

struct Client::Impl {
  ClientOptions options;
  std::unique_ptr<net::Worker> worker;
  std::unique_ptr<ControlClient> control;
  net::EndpointId switch_ep = net::kInvalidEndpoint;
  uint32_t cpu_node = 0;
  std::vector<MemNode> nodes;  // by node id
  std::unique_ptr<FarAllocator> allocator;
  // Request ids must not repeat across clients that get the same CPU node id
  // from different switch lifetimes (memory nodes remember STORE-bearing
  // ids): each client starts its counter at a random point.
  uint64_t next_counter = (std::random_device{}() | (uint64_t{std::random_device{}()} << 32)) >> 25;
  std::unordered_map<uint64_t, Pending> pending;
  std::deque<std::pair<TraverseCallback, Result<TraversalResult>>> ready;
  std::set<std::pair<uint64_t, uint32_t>> known_programs;  // (hash, node)
  ClientCounters counters;
  bool switch_down = false;
  std::unique_ptr<BlockCache> cache;  // null: no cache
  LayerHooks layer;                   // e.g. pulse::RpcClient's timers and callbacks

  // Services the layer's timers and callbacks; its next deadline.
  Clock::time_point ServiceLayer() { return layer.service ? layer.service() : Clock::time_point::max(); }
  bool LayerReady() const { return layer.has_ready && layer.has_ready(); }

  bool caching() const { return cache != nullptr; }
  Status Read(uint64_t addr, void* dst, size_t len) {
    return caching() ? cache->Read(addr, dst, len) : Rma(false, addr, dst, len);
  }
  Status Write(uint64_t addr, const void* src, size_t len) {
    return caching() ? cache->Write(addr, src, len) : Rma(true, addr, const_cast<void*>(src), len);
  }

  Clock::time_point next_switch_attempt{};  // after a failed reconnection
  std::string switch_error;                 // why the last one failed
  std::set<uint32_t> unrouted;              // known nodes the switch did not list

  // ---- connections (lost ones come back here) ------------------------------

  // Connects to memory node `n` at n.address: endpoint, hello, remote key.
  // Returns the node's hello answer.
  Result<json> ConnectNode(MemNode& n) {
    auto naddr = ParseAddress(n.address);
    if (!naddr.ok()) return naddr.status();
    auto nep = worker->Connect(naddr->first, naddr->second, options.connect_timeout);
    if (!nep.ok())
      return Status::Unavailable(fmt::format("cannot reach memory node {} at {}: {}", n.id, n.address,
                                             nep.status().ToString()));
    n.ep = *nep;
    auto nh = control->Call(n.ep, json{{"op", "hello"}}, options.connect_timeout);
    if (!nh.ok()) return nh.status();
    std::vector<uint8_t> rkey;
    const std::string hex = (*nh)["rkey"].get<std::string>();
    for (size_t i = 0; i + 1 < hex.size(); i += 2) rkey.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    auto key = worker->ImportRkey(n.ep, rkey);
    if (!key.ok()) return key.status();
    n.rkey = std::move(*key);
    n.remote_base = (*nh)["remote_base"].get<uint64_t>();
    return nh;
  }

  // Ready to use memory node `n`: reconnects a lost connection if the
  // switch lists the node as alive (it may have restarted elsewhere).
  Status EnsureNode(MemNode& n) {
    if (n.ep != net::kInvalidEndpoint && !n.lost && worker->IsConnected(n.ep)) return Status::Ok();
    n.rkey = net::RemoteKey();  // before its endpoint goes
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
      n.rkey = net::RemoteKey();
      if (n.ep != net::kInvalidEndpoint) (void)worker->Close(n.ep, std::chrono::milliseconds(0));
      n.ep = net::kInvalidEndpoint;
      return Status::Unavailable(fmt::format("{} at {}: reconnecting: {}", what, n.address, connected.message()));
    }
    ++counters.reconnections;
    return Status::Ok();
  }

  // Ready to send through the switch: reconnects a lost one (bounded by
  // reconnect_timeout; see ClientOptions).
  Status EnsureSwitch() {
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
  Status CheckRouted(uint64_t cur_ptr) {
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

  std::chrono::milliseconds rma_timeout() const { return options.request_timeout * options.max_attempts; }

  MemNode* NodeFor(uint64_t addr) {
    for (auto& n : nodes)
      if (addr - n.base < n.size) return &n;
    return nullptr;
  }

  Status Rma(bool write, uint64_t addr, void* buf, size_t len) {
    MemNode* n = NodeFor(addr);
    if (n == nullptr || len > n->size - (addr - n->base))
      return Status::InvalidArgument(fmt::format("far address {:#x} (+{}) is outside every memory node", addr, len));
    PULSE_RETURN_IF_ERROR(EnsureNode(*n));
    const uint64_t remote = n->remote_base + (addr - n->base);
    if (write) {
      ++counters.remote_writes;
      return worker->Put(n->rkey, remote, buf, len, rma_timeout());
    }
    ++counters.remote_reads;
    counters.remote_read_bytes += len;
    return worker->Get(n->rkey, remote, buf, len, rma_timeout());
  }

  // ---- traversals ---------------------------------------------------------

  void SendRequest(Pending& p, bool retransmission) {
    MemNode* owner = NodeFor(p.request.cur_ptr);
    const uint32_t node = owner ? owner->id : UINT32_MAX;
    const bool known = known_programs.count({p.program->hash(), node}) > 0;
    if (!known || retransmission) p.request.program = p.program->encoded();
    else p.request.program.clear();
    p.deadline = Clock::now() + options.request_timeout;
    p.request.cpu_node = cpu_node;  // it changes when a restarted switch is rejoined
    ++p.attempts;
    ++p.result.issues;
    ++counters.requests_sent;
    if (retransmission) {
      ++p.result.retransmissions;
      ++counters.retransmissions;
    }
    Status s = worker->Send(switch_ep, kAmTraversal, EncodeMessage(p.request));
    if (!s.ok()) {
      p.deadline = Clock::now();  // let the timer path retry or fail it
      if (!worker->IsConnected(switch_ep)) switch_down = true;  // before its disconnect handler runs
    }
  }

  void Complete(uint64_t id, Result<TraversalResult> result) {
    auto it = pending.find(id);
    ready.emplace_back(std::move(it->second.done), std::move(result));
    pending.erase(it);
  }

  // A new attempt from the state in `from` under a fresh request id (the old
  // id may be remembered by a memory node's duplicate filter).
  void Reissue(uint64_t id, const TraversalMessage& from) {
    Pending p = std::move(pending[id]);
    pending.erase(id);
    p.request.request_id = MakeRequestId(cpu_node, next_counter++);
    p.request.cur_ptr = from.cur_ptr;
    p.request.scratch = from.scratch;
    p.request.iterations = from.iterations;
    p.attempts = 0;
    ++counters.reissues;
    const uint64_t new_id = p.request.request_id;
    SendRequest(pending.emplace(new_id, std::move(p)).first->second, false);
  }

  void OnTraversalMessage(std::span<const uint8_t> payload) {
    auto decoded = DecodeMessage(payload, 1 << 20);
    if (!decoded.ok()) return;  // nothing to match it to
    TraversalMessage& m = *decoded;
    auto it = pending.find(m.request_id);
    if (it == pending.end()) {
      ++counters.stale_responses;
      return;
    }
    Pending& p = it->second;
    if (!p.program) {  // a no-op probe (Ping)
      TraversalResult r;
      r.status = m.status;
      return Complete(m.request_id, std::move(r));
    }
    MemNode* owner = NodeFor(p.request.cur_ptr);
    if (m.status == TraversalStatus::kUnknownProgram) {
      // The node that lacks the program owns m.cur_ptr: the request's first
      // node, or one a memory node continued to by hash only.
      if (MemNode* lacking = NodeFor(m.cur_ptr)) known_programs.erase({p.program->hash(), lacking->id});
      ++counters.unknown_programs;
      const bool continued = m.cur_ptr != p.request.cur_ptr || m.iterations != p.request.iterations;
      if (continued && m.scratch.size() == p.request.scratch.size()) {
        return Reissue(m.request_id, m);  // resume where it stopped, code attached
      }
      ++counters.reissues;
      p.attempts = 0;
      return SendRequest(p, /*retransmission=*/true);  // same id, code attached
    }
    if (owner && m.status != TraversalStatus::kFaultBadRequest) known_programs.insert({p.program->hash(), owner->id});
    const bool again = (m.status == TraversalStatus::kContinue && p.options.follow_continue) ||
                       (m.status == TraversalStatus::kNotLocal && (p.request.flags & kFlagPulseAcc) &&
                        NodeFor(m.cur_ptr) != nullptr);
    if (again) return Reissue(m.request_id, m);
    TraversalResult r = p.result;
    r.status = m.status == TraversalStatus::kNotLocal ? TraversalStatus::kFaultInvalidPointer : m.status;
    r.cur_ptr = m.cur_ptr;
    r.scratch = std::move(m.scratch);
    r.iterations = m.iterations;
    r.fault_pc = m.fault_pc;
    r.fault_addr = m.fault_addr;
    r.offloaded = true;
    counters.traversal_iterations += m.iterations;
    // The memory nodes may have written blocks cached here.
    if (caching() && p.program->info().has_store) (void)cache->Invalidate();
    if (MemNode* at = NodeFor(m.fault_addr);
        m.status == TraversalStatus::kFaultInvalidPointer && at != nullptr && unrouted.count(at->id)) {
      return Complete(m.request_id, Status::Unavailable(fmt::format(
                                        "traversal: memory node {} owning {:#x} has not registered with the switch",
                                        at->id, m.fault_addr)));
    }
    if (m.status == TraversalStatus::kNodeUnavailable) {
      if (RideOutUnavailable(p)) return;
      return Complete(m.request_id,
                      Status::Unavailable(fmt::format(
                          "traversal: memory node owning {:#x} is unavailable{}", m.cur_ptr,
                          options.ride_out_unavailable.count() > 0
                              ? fmt::format(" (re-sent for {} ms)", options.ride_out_unavailable.count())
                              : "")));
    }
    if (m.status == TraversalStatus::kOutcomeUnknown) {
      return Complete(m.request_id, Status::OutcomeUnknown(fmt::format(
                                        "traversal {:#x}: outcome unknown: the memory node owning {:#x} restarted "
                                        "after it began running this STORE-bearing request (not run again)",
                                        m.request_id, m.cur_ptr)));
    }
    Complete(m.request_id, std::move(r));
  }

  // Keeps `p` pending for a re-send after a "node unavailable" answer while
  // its ride-out time lasts.  False: the caller gets Unavailable now.
  bool RideOutUnavailable(Pending& p) {
    if (options.ride_out_unavailable.count() <= 0) return false;
    const auto now = Clock::now();
    if (p.unavailable_until == Clock::time_point{}) p.unavailable_until = now + options.ride_out_unavailable;
    if (now >= p.unavailable_until) return false;
    p.deadline = std::min(now + options.unavailable_retry_interval, p.unavailable_until);
    p.resend_when_due = true;
    return true;
  }

  void CheckTimeouts() {
    const auto now = Clock::now();
    std::vector<uint64_t> expired;
    for (auto& [id, p] : pending)
      if (p.deadline <= now) expired.push_back(id);
    Status switch_status = Status::Ok();
    if (switch_down && !expired.empty()) switch_status = EnsureSwitch();
    for (uint64_t id : expired) {
      Pending& p = pending[id];
      if (!switch_status.ok()) {
        Complete(id, Status::Unavailable("traversal: " + switch_status.message()));
      } else if (p.resend_when_due) {
        // Same id: a restarted node answers a STORE-bearing request from
        // its record.  A fresh attempt budget: the node may be back.
        p.resend_when_due = false;
        p.attempts = 0;
        ++counters.unavailable_resends;
        SendRequest(p, /*retransmission=*/true);
      } else if (p.attempts < options.max_attempts) {
        SendRequest(p, /*retransmission=*/true);
      } else {
        ++counters.timeouts;
        MemNode* owner = NodeFor(p.request.cur_ptr);
        Complete(id, Status::Timeout(fmt::format(
                         "traversal {:#x}: no answer for cur_ptr {:#x} (memory node {}) after {} attempts of {} ms",
                         id, p.request.cur_ptr, owner ? std::to_string(owner->id) : "none", p.attempts,
                         options.request_timeout.count())));
      }
    }
  }

  void RunReady() {
    while (!ready.empty()) {
      auto [done, result] = std::move(ready.front());
      ready.pop_front();
      if (done) done(std::move(result));
    }
  }

  // Drives the fabric until pred() or the timeout; runs timers and callbacks.
  Status DriveUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    const auto end = Clock::now() + timeout;
    for (;;) {
      RunReady();
      if (pred()) return Status::Ok();
      CheckTimeouts();
      const Clock::time_point layer_deadline = ServiceLayer();
      RunReady();
      if (pred()) return Status::Ok();
      const auto now = Clock::now();
      if (now >= end) return Status::Timeout("client: gave up waiting");
      auto slice = std::min<Clock::duration>(end - now, layer_deadline - std::min(layer_deadline, now));
      for (auto& [id, p] : pending) slice = std::min<Clock::duration>(slice, p.deadline - now);
      slice = std::max<Clock::duration>(slice, std::chrono::microseconds(100));
      // A slice that times out is the normal case; a connection that fails
      // reaches its callers through the disconnect handler.
      IgnoreError(worker->RunUntil([&] { return !ready.empty() || LayerReady() || pred(); }, slice));
    }
  }
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

namespace {
Result<std::unique_ptr<Client::Impl>> ConnectImpl(const ClientOptions& options);
}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  // A peer's answer missing a field or with a field of the wrong type is an
  // error of the peer, reported as a value.
  try {
    auto impl = ConnectImpl(options);
    if (!impl.ok()) return impl.status();
    return std::unique_ptr<Client>(new Client(std::move(impl).value()));
  } catch (const std::exception& e) {  // nlohmann::json type errors, std::stoul on bad hex
    return Status::InvalidArgument(fmt::format("cluster answered a malformed hello: {}", e.what()));
  }
}

namespace {
Result<std::unique_ptr<Client::Impl>> ConnectImpl(const ClientOptions& options) {
  auto impl = std::make_unique<Client::Impl>();
  impl->options = options;
  auto worker = net::Worker::Create(options.worker);
  if (!worker.ok()) return worker.status();
  impl->worker = std::move(*worker);
  impl->control = std::make_unique<ControlClient>(impl->worker.get());
  auto addr = ParseAddress(options.switch_address);
  if (!addr.ok()) return addr.status();
  auto ep = impl->worker->Connect(addr->first, addr->second, options.connect_timeout);
  if (!ep.ok())
    return Status::Unavailable(fmt::format("cannot reach the switch at {}: {}", options.switch_address,
                                           ep.status().ToString()));
  impl->switch_ep = *ep;
  auto hello = impl->control->Call(impl->switch_ep, json{{"op", "hello"}}, options.connect_timeout);
  Client::Impl* raw = impl.get();
  if (!hello.ok()) return hello.status();
  impl->cpu_node = (*hello)["cpu_node"].get<uint32_t>();
  for (const auto& n : (*hello)["memnodes"]) {
    MemNode node;
    node.id = n["node"].get<uint32_t>();
    node.address = n["address"].get<std::string>();
    node.base = n["base"].get<uint64_t>();
    node.size = n["size"].get<uint64_t>();
    if (!n.value("alive", true)) {  // known but down: reachable later, not now
      impl->nodes.push_back(std::move(node));
      continue;
    }
    auto nh = raw->ConnectNode(node);
    if (!nh.ok()) return nh.status();
    if (options.dispatch.use_cluster_calibration && nh->contains("t_i_ns") && nh->contains("t_d_ns")) {
      // The slowest node's figures: offloading must not overload any of them.
      const double t_i = (*nh)["t_i_ns"].get<double>(), t_d = (*nh)["t_d_ns"].get<double>();
      if (impl->nodes.empty() || t_i / t_d > impl->options.dispatch.t_i_ns / impl->options.dispatch.t_d_ns) {
        impl->options.dispatch.t_i_ns = t_i;
        impl->options.dispatch.t_d_ns = t_d;
      }
    }
    impl->nodes.push_back(std::move(node));
  }
  std::sort(impl->nodes.begin(), impl->nodes.end(), [](const MemNode& a, const MemNode& b) { return a.id < b.id; });
  impl->worker->SetHandler(kAmTraversal, [raw](net::EndpointId, std::span<const uint8_t> payload) {
    raw->OnTraversalMessage(payload);
  });
  impl->worker->SetDisconnectHandler([raw](net::EndpointId ep, const Status&) {
    if (ep == raw->switch_ep) {
      raw->switch_down = true;
      // At the next timer check: sent again once the switch is back, or failed.
      for (auto& [id, p] : raw->pending) p.deadline = Clock::now();
    }
    for (auto& n : raw->nodes)  // cleaned up outside the handler (EnsureNode)
      if (n.ep == ep) n.lost = true;
  });
  if (options.cache.bytes > 0) {
    const CacheOptions& c = options.cache;
    const uint32_t block = c.granularity == CacheGranularity::kPage ? c.page_bytes : c.object_bytes;
    if (block < 8 || (block & (block - 1)) != 0)
      return Status::InvalidArgument(fmt::format("cache: block size {} is not a power of two >= 8", block));
    if (c.bytes < block)
      return Status::InvalidArgument(fmt::format("cache: bytes {} is less than one block of {}", c.bytes, block));
    impl->cache = std::make_unique<BlockCache>(
        c, [raw](uint64_t addr, void* dst, size_t len) { return raw->Rma(false, addr, dst, len); },
        [raw](uint64_t addr, const void* src, size_t len) {
          return raw->Rma(true, addr, const_cast<void*>(src), len);
        },
        &raw->counters);
  }
  impl->allocator = std::make_unique<FarAllocator>(
      options.policy, options.slab_bytes, static_cast<uint32_t>(impl->nodes.size()),
      [raw](uint32_t node, uint64_t bytes) -> Result<std::pair<uint64_t, uint64_t>> {
        PULSE_RETURN_IF_ERROR(raw->EnsureNode(raw->nodes[node]));
        auto r = raw->control->Call(raw->nodes[node].ep,
                                    json{{"op", "alloc"}, {"bytes", bytes}, {"tenant", raw->options.tenant}, {"perms", "rw"}},
                                    raw->rma_timeout());
        if (!r.ok()) return r.status();  // a full pool arrives as ResourceExhausted
        return std::make_pair((*r)["base"].get<uint64_t>(), (*r)["length"].get<uint64_t>());
      });
  return impl;
}
}  // namespace

uint32_t Client::memory_nodes() const { return static_cast<uint32_t>(impl_->nodes.size()); }
uint32_t Client::cpu_node() const { return impl_->cpu_node; }
std::optional<uint32_t> Client::NodeOf(uint64_t addr) const {
  MemNode* n = impl_->NodeFor(addr);
  if (n == nullptr) return std::nullopt;
  return n->id;
}

Result<uint64_t> Client::Allocate(uint64_t bytes, std::optional<uint32_t> node) {
  return impl_->allocator->Allocate(bytes, node);
}
Status Client::Free(uint64_t addr) { return impl_->allocator->Free(addr); }

Status Client::Read(uint64_t addr, void* dst, size_t length) { return impl_->Read(addr, dst, length); }
Status Client::Write(uint64_t addr, const void* src, size_t length) { return impl_->Write(addr, src, length); }
Status Client::FlushCache() { return impl_->caching() ? impl_->cache->Flush() : Status::Ok(); }
Status Client::InvalidateCache() { return impl_->caching() ? impl_->cache->Invalidate() : Status::Ok(); }

namespace {
// The lock service's answer to one control call on the node owning addr.
Result<json> LockCall(Client::Impl& im, uint64_t addr, json request) {
  MemNode* n = im.NodeFor(addr);
  if (n == nullptr)
    return Status::InvalidArgument(fmt::format("lock: far address {:#x} is outside every memory node", addr));
  if (n->ep == net::kInvalidEndpoint)
    return Status::Unavailable(fmt::format("lock: memory node {} owning {:#x} is down", n->id, addr));
  request["addr"] = addr;
  request["tenant"] = im.options.tenant;
  return im.control->Call(n->ep, std::move(request), im.rma_timeout());
}
}  // namespace

Result<bool> Client::TryLock(uint64_t lock_addr, uint64_t holder, bool exclusive, std::chrono::milliseconds lease) {
  auto r = LockCall(*impl_, lock_addr,
                    json{{"op", "lock"}, {"holder", holder}, {"mode", exclusive ? "exclusive" : "shared"},
                         {"lease_ms", lease.count()}});
  if (!r.ok()) return r.status();
  auto granted = r->find("granted");
  if (granted == r->end() || !granted->is_boolean())
    return Status::Internal(fmt::format("lock {:#x}: the memory node's answer has no \"granted\"", lock_addr));
  return granted->get<bool>();
}

namespace {
// The memory node's code arrives with its error: a hold that is gone is
// FailedPrecondition.
Status LockHoldStatus(Result<json> answer) {
  if (answer.ok()) return Status::Ok();
  return answer.status();
}
}  // namespace

Status Client::RenewLock(uint64_t lock_addr, uint64_t holder, std::chrono::milliseconds lease) {
  return LockHoldStatus(
      LockCall(*impl_, lock_addr, json{{"op", "lock_renew"}, {"holder", holder}, {"lease_ms", lease.count()}}));
}

Status Client::Unlock(uint64_t lock_addr, uint64_t holder) {
  return LockHoldStatus(LockCall(*impl_, lock_addr, json{{"op", "unlock"}, {"holder", holder}}));
}

namespace {

// Far memory seen from the CPU node: each window is one one-sided read (or
// served by the cache).  Protection: only memory this client allocated is
// readable or writable.  With cache_only, a window that is not entirely
// cached stops the traversal with kNotLocal, its state intact: the caller
// offloads it from there.
class RemoteMemory : public FarMemory {
 public:
  RemoteMemory(Client::Impl* impl, const FarAllocator* allocator, bool cache_only = false)
      : impl_(impl), allocator_(allocator), cache_only_(cache_only) {}
  TraversalStatus ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) override {
    MemNode* node = impl_->NodeFor(addr);
    if (node == nullptr) return TraversalStatus::kFaultInvalidPointer;
    if (!allocator_->Owns(addr, std::max<uint32_t>(len, 1))) {
      // Memory of another client of the tenant: the memory node decides.
      return cache_only_ ? TraversalStatus::kNotLocal : TraversalStatus::kFaultProtection;
    }
    if (len == 0) return TraversalStatus::kDone;
    if (cache_only_) {
      if (!impl_->cache->ReadIfCached(addr, dst, len)) return TraversalStatus::kNotLocal;
    } else if (!impl_->Read(addr, dst, len).ok()) {
      return TraversalStatus::kNodeUnavailable;
    }
    // Cached windows cross no network: only reads at the CPU node count.
    if (!cache_only_ && last_node_ != UINT32_MAX && node->id != last_node_) ++impl_->counters.node_crossings;
    last_node_ = node->id;
    return TraversalStatus::kDone;
  }
  TraversalStatus Store(uint64_t addr, const uint8_t* src, uint32_t len) override {
    if (impl_->NodeFor(addr) == nullptr) return TraversalStatus::kFaultInvalidPointer;
    if (!allocator_->Owns(addr, len)) return TraversalStatus::kFaultProtection;
    return impl_->Write(addr, src, len).ok() ? TraversalStatus::kDone : TraversalStatus::kNodeUnavailable;
  }

 private:
  Client::Impl* impl_;
  const FarAllocator* allocator_;
  bool cache_only_;
  uint32_t last_node_ = UINT32_MAX;
};

}  // namespace

void Client::TraverseAsync(const ProgramRef& program, uint64_t cur_ptr, std::vector<uint8_t> scratch,
                           const TraverseOptions& options, TraverseCallback done) {
  Impl& im = *impl_;
  ++im.counters.traversals;
  DispatchPolicy policy = im.options.dispatch;
  if (options.mode) policy.mode = *options.mode;
  if (!policy.ShouldOffload(program->info().longest_path)) {
    ++im.counters.executed_locally;
    RemoteMemory memory(&im, im.allocator.get());
    TraversalState state;
    state.cur_ptr = cur_ptr;
    state.scratch = std::move(scratch);
    TraversalResult r;
    r.offloaded = false;
    TraversalOutcome out;
    do {  // follow_continue is implicit here: nothing to re-issue to
      out = InterpretTraversal(*program, memory, options.max_iterations ? options.max_iterations : 4096, &state);
    } while (out.status == TraversalStatus::kContinue && options.follow_continue);
    if (out.status == TraversalStatus::kNodeUnavailable) {
      im.ready.emplace_back(std::move(done), Status::Unavailable(fmt::format(
                                                 "traversal: remote read near {:#x} failed", state.cur_ptr)));
      return;
    }
    r.status = out.status == TraversalStatus::kNotLocal ? TraversalStatus::kFaultInvalidPointer : out.status;
    r.cur_ptr = state.cur_ptr;
    r.scratch = std::move(state.scratch);
    r.iterations = state.iterations;
    r.fault_pc = out.fault_pc;
    r.fault_addr = out.fault_addr;
    im.counters.traversal_iterations += state.iterations;
    im.ready.emplace_back(std::move(done), std::move(r));
    return;
  }
  uint32_t iterations_here = 0;
  if (im.caching()) {
    // Run here while the windows are cached; offload from the first miss.
    RemoteMemory memory(&im, im.allocator.get(), /*cache_only=*/true);
    TraversalState state;
    state.cur_ptr = cur_ptr;
    state.scratch = std::move(scratch);
    TraversalOutcome out;
    do {
      out = InterpretTraversal(*program, memory, options.max_iterations ? options.max_iterations : 4096, &state);
    } while (out.status == TraversalStatus::kContinue && options.follow_continue);
    im.counters.cache_local_iterations += state.iterations;
    if (out.status != TraversalStatus::kNotLocal) {
      ++im.counters.cache_only_traversals;
      ++im.counters.executed_locally;
      im.counters.traversal_iterations += state.iterations;
      TraversalResult r;
      r.offloaded = false;
      r.status = out.status;
      r.cur_ptr = state.cur_ptr;
      r.scratch = std::move(state.scratch);
      r.iterations = state.iterations;
      r.fault_pc = out.fault_pc;
      r.fault_addr = out.fault_addr;
      im.ready.emplace_back(std::move(done), std::move(r));
      return;
    }
    cur_ptr = state.cur_ptr;
    scratch = std::move(state.scratch);
    iterations_here = state.iterations;
    // The memory nodes must see this CPU node's writes.
    if (Status s = im.cache->Flush(); !s.ok()) {
      im.ready.emplace_back(std::move(done), s);
      return;
    }
  }
  ++im.counters.offloaded;
  Pending p;
  p.program = program;
  p.options = options;
  p.done = std::move(done);
  TraversalMessage& m = p.request;
  m.kind = MessageKind::kRequest;
  m.request_id = MakeRequestId(im.cpu_node, im.next_counter++);
  m.cpu_node = im.cpu_node;
  m.tenant = im.options.tenant;
  m.flags = (options.pulse_acc.value_or(im.options.pulse_acc) ? kFlagPulseAcc : 0) |
            (program->info().has_store ? kFlagHasStore : 0);
  m.program_hash = program->hash();
  m.max_iterations = options.max_iterations;
  m.cur_ptr = cur_ptr;
  m.scratch = std::move(scratch);
  m.iterations = iterations_here;
  Status reachable = im.EnsureSwitch();
  if (reachable.ok() && !im.unrouted.empty()) reachable = im.CheckRouted(cur_ptr);
  if (!reachable.ok()) {
    im.ready.emplace_back(std::move(p.done), Status::Unavailable(reachable.message()));
    return;
  }
  const uint64_t id = m.request_id;
  im.SendRequest(im.pending.emplace(id, std::move(p)).first->second, false);
}

Result<TraversalResult> Client::Traverse(const ProgramRef& program, uint64_t cur_ptr, std::vector<uint8_t> scratch,
                                         const TraverseOptions& options) {
  std::optional<Result<TraversalResult>> out;
  TraverseAsync(program, cur_ptr, std::move(scratch), options,
                [&out](Result<TraversalResult> r) { out.emplace(std::move(r)); });
  // The retry budget bounds the wait; the extra second covers re-issues.
  const auto budget = impl_->options.request_timeout * (impl_->options.max_attempts + 1) + std::chrono::seconds(1);
  for (;;) {
    Status s = impl_->DriveUntil([&] { return out.has_value(); }, std::chrono::duration_cast<std::chrono::milliseconds>(budget));
    if (out) return std::move(*out);
    if (!s.ok() && impl_->pending.empty()) return s;  // cannot happen: every pending one times out
  }
}

void Client::Poll() {
  impl_->worker->Progress();
  impl_->CheckTimeouts();
  impl_->RunReady();
  impl_->ServiceLayer();
}

Status Client::WaitAll(std::chrono::milliseconds timeout) {
  Status s = impl_->DriveUntil([&] { return impl_->pending.empty() && impl_->ready.empty(); }, timeout);
  if (!s.ok()) return Status::Timeout(fmt::format("client: {} traversals still pending", impl_->pending.size()));
  return s;
}

size_t Client::pending() const { return impl_->pending.size(); }

Status Client::Ping(uint64_t addr) {
  Impl& im = *impl_;
  TraversalMessage m;
  m.request_id = MakeRequestId(im.cpu_node, im.next_counter++);
  m.cpu_node = im.cpu_node;
  m.tenant = im.options.tenant;
  m.flags = kFlagNoop;
  m.cur_ptr = addr;
  bool finished = false, answered = false;
  const uint64_t id = m.request_id;
  PULSE_RETURN_IF_ERROR(im.EnsureSwitch());
  m.cpu_node = im.cpu_node;
  // A no-op is not retransmitted: it measures one round trip.
  Pending p;
  p.request = m;
  p.deadline = Clock::now() + im.options.request_timeout;
  p.attempts = im.options.max_attempts;
  p.done = [&](Result<TraversalResult> r) {
    finished = true;
    if (r.ok()) answered = r.value().status == TraversalStatus::kDone;
  };
  im.pending.emplace(id, std::move(p));
  Status s = im.worker->Send(im.switch_ep, kAmTraversal, EncodeMessage(m));
  if (!s.ok()) {
    im.pending.erase(id);
    return s;
  }
  // Its only error is a timeout, which `finished` tells too.
  IgnoreError(im.DriveUntil([&] { return finished; }, im.options.request_timeout * 2));
  if (!finished) return Status::Timeout("ping: no answer");
  return answered ? Status::Ok() : Status::Unavailable("ping: failed");
}

const DispatchPolicy& Client::dispatch_policy() const { return impl_->options.dispatch; }
void Client::SetDispatchPolicy(const DispatchPolicy& policy) { impl_->options.dispatch = policy; }
const ClientCounters& Client::counters() const {
  impl_->counters.control_retransmissions = impl_->control->retransmissions();
  return impl_->counters;
}
const net::Counters& Client::net_counters() const { return impl_->worker->counters(); }
net::Worker& Client::worker() { return *impl_->worker; }
net::EndpointId Client::memnode_endpoint(uint32_t node) const {
  for (const auto& n : impl_->nodes)
    if (n.id == node) return n.ep;
  return net::kInvalidEndpoint;
}
TenantId Client::tenant() const { return impl_->options.tenant; }
Status Client::DriveUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  return impl_->DriveUntil(pred, timeout);
}
void Client::SetLayerHooks(LayerHooks hooks) { impl_->layer = std::move(hooks); }
net::EndpointId Client::switch_endpoint() const { return impl_->switch_down ? net::kInvalidEndpoint : impl_->switch_ep; }

}  // namespace pulse
