// The CPU-node side of the RPC baseline.  Each attempt has a request id, a
// timer and a retry budget, like a traversal's; a reply that stops at a node
// boundary is re-issued under a fresh id to the memory node that owns the
// next pointer, carrying the handler's state.  Callbacks are queued and run
// outside the fabric's handlers.  There is no wait loop here: the Client's
// own (DriveUntil) services this client's timers and callbacks through
// Client::SetLayerHooks.
#include "pulse/rpc.h"

#include <algorithm>
#include <deque>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "pulse/cluster.h"
#include "rpc/rpc_message.h"

namespace pulse {

using Clock = std::chrono::steady_clock;
using rpc::RpcReply;
using rpc::RpcRequest;

namespace {

// Replies larger than this are malformed (a scan's output is bounded by its
// limit, which the caller chose).
constexpr uint32_t kMaxReplyBytes = 64u << 20;

struct PendingCall {
  RpcRequest request;    // as last sent
  uint32_t node = 0;     // where it was sent
  Clock::time_point deadline;
  uint32_t attempts = 0;
  uint32_t reissues = 0;
  RpcResult result;      // accumulated over the legs
  RpcClient::Callback done;
};

}  // namespace

struct RpcClient::Impl {
  Client* client = nullptr;
  RpcOptions options;
  uint64_t next_counter = 1;
  std::unordered_map<uint64_t, PendingCall> pending;
  std::deque<std::pair<Callback, Result<RpcResult>>> ready;
  RpcCounters counters;

  void Finish(uint64_t id, Result<RpcResult> r) {
    auto it = pending.find(id);
    ready.emplace_back(std::move(it->second.done), std::move(r));
    pending.erase(it);
  }

  // Sends the call's request to the owner of its start pointer.  Completes
  // it instead when no node owns the pointer or the owner is down.
  void Send(uint64_t id, bool retransmission) {
    PendingCall& p = pending.at(id);
    const std::optional<uint32_t> owner = client->NodeOf(p.request.start);
    if (!owner) {
      p.result.status = TraversalStatus::kFaultInvalidPointer;
      p.result.next_ptr = p.result.fault_addr = p.request.start;
      p.result.state = p.request.state;
      return Finish(id, std::move(p.result));
    }
    const bool via_switch = options.path == RpcPath::kSwitch;
    const net::EndpointId ep = via_switch ? client->switch_endpoint() : client->memnode_endpoint(*owner);
    if (ep == net::kInvalidEndpoint || !client->worker().IsConnected(ep))
      return Finish(id, Status::Unavailable(fmt::format("rpc: {} (for memory node {}, owner of {:#x}) is unavailable",
                                                        via_switch ? "the switch" : "the memory node", *owner,
                                                        p.request.start)));
    p.node = *owner;
    p.deadline = Clock::now() + options.request_timeout;
    ++p.attempts;
    ++p.result.issues;
    ++counters.requests_sent;
    if (retransmission) {
      ++p.result.retransmissions;
      ++counters.retransmissions;
    }
    Status s = client->worker().Send(ep, kAmRpcRequest, rpc::EncodeRpcRequest(p.request));
    if (!s.ok()) p.deadline = Clock::now();  // the timer path retries or fails it
  }

  void OnReply(std::span<const uint8_t> payload) {
    Result<RpcReply> decoded = rpc::DecodeRpcReply(payload, kMaxReplyBytes);
    if (!decoded.ok()) {
      ++counters.bad_replies;
      return;
    }
    RpcReply& m = *decoded;
    auto it = pending.find(m.request_id);
    if (it == pending.end()) {
      ++counters.stale_replies;
      return;
    }
    PendingCall& p = it->second;
    if (m.status == TraversalStatus::kFaultBadRequest) {
      return Finish(m.request_id,
                    Status::InvalidArgument(fmt::format("rpc to memory node {} rejected: {}", p.node,
                                                        std::string(m.output.begin(), m.output.end()))));
    }
    if (m.status == TraversalStatus::kNodeUnavailable) {  // said by the switch
      return Finish(m.request_id, Status::Unavailable(fmt::format("rpc: memory node {} (owner of {:#x}) is unavailable",
                                                                  p.node, m.next_ptr)));
    }
    RpcResult& r = p.result;
    r.output.insert(r.output.end(), m.output.begin(), m.output.end());
    r.steps += m.steps;
    r.node_ns += m.exec_ns;
    const bool resume = m.status == TraversalStatus::kNotLocal || m.status == TraversalStatus::kContinue;
    if (resume && p.reissues < options.max_reissues && client->NodeOf(m.next_ptr).has_value()) {
      // A new attempt from where it stopped, under a fresh id.
      PendingCall next = std::move(p);
      pending.erase(it);
      if (m.status == TraversalStatus::kNotLocal) {
        ++next.result.node_crossings;
        ++counters.node_crossings;
      } else {
        ++counters.continues;
      }
      ++next.reissues;
      next.attempts = 0;
      next.request.request_id = MakeRequestId(client->cpu_node(), next_counter++);
      next.request.start = m.next_ptr;
      next.request.state = std::move(m.state);
      const uint64_t id = next.request.request_id;
      pending.emplace(id, std::move(next));
      return Send(id, false);
    }
    r.status = resume ? TraversalStatus::kFaultInvalidPointer : m.status;
    r.state = std::move(m.state);
    r.next_ptr = m.next_ptr;
    r.fault_addr = resume ? m.next_ptr : m.fault_addr;
    Finish(m.request_id, std::move(r));
  }

  // Retransmits, or fails, the calls whose attempt has timed out.
  void ServiceTimers() {
    const auto now = Clock::now();
    std::vector<uint64_t> expired;
    for (auto& [id, p] : pending)
      if (p.deadline <= now) expired.push_back(id);
    for (uint64_t id : expired) {
      PendingCall& p = pending.at(id);
      if (p.attempts < options.max_attempts) {
        Send(id, /*retransmission=*/true);
      } else {
        ++counters.timeouts;
        Finish(id, Status::Timeout(fmt::format(
                       "rpc {:#x}: no reply from memory node {} for start {:#x} after {} attempts of {} ms", id,
                       p.node, p.request.start, p.attempts, options.request_timeout.count())));
      }
    }
  }

  // Runs the callbacks of finished calls (a callback may start new calls).
  void DeliverReady() {
    while (!ready.empty()) {
      auto item = std::move(ready.front());
      ready.pop_front();
      if (item.first) item.first(std::move(item.second));
    }
  }

  // The Client's layer hook: timers, then callbacks; the next deadline.
  Clock::time_point Service() {
    ServiceTimers();
    DeliverReady();
    Clock::time_point next = Clock::time_point::max();
    for (const auto& entry : pending) next = std::min(next, entry.second.deadline);
    return next;
  }
};

RpcClient::RpcClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RpcClient::~RpcClient() {
  impl_->client->worker().SetHandler(kAmRpcReply, {});
  impl_->client->SetLayerHooks({});
}

Result<std::unique_ptr<RpcClient>> RpcClient::Create(Client* client, const RpcOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("RpcClient: no client");
  if (options.max_attempts == 0) return Status::InvalidArgument("RpcClient: max_attempts must be positive");
  if (options.core_ghz < 0 || options.core_ghz * 1000.0 > rpc::kRpcMaxCoreMhz)
    return Status::InvalidArgument(fmt::format("RpcClient: core_ghz {} is outside [0, {}]", options.core_ghz,
                                               rpc::kRpcMaxCoreMhz / 1000.0));
  auto impl = std::make_unique<Impl>();
  impl->client = client;
  impl->options = options;
  Impl* raw = impl.get();
  client->worker().SetHandler(kAmRpcReply, [raw](net::EndpointId, std::span<const uint8_t> p) { raw->OnReply(p); });
  client->SetLayerHooks({[raw] { return raw->Service(); }, [raw] { return !raw->ready.empty(); }});
  return std::unique_ptr<RpcClient>(new RpcClient(std::move(impl)));
}

void RpcClient::CallAsync(uint16_t handler, uint64_t start, std::span<const uint8_t> state,
                          const RpcCallOptions& options, Callback done) {
  Impl& im = *impl_;
  ++im.counters.calls;
  PendingCall p;
  p.request.handler = handler;
  if (options.wimpy.value_or(im.options.wimpy)) {
    const double mhz = std::clamp(im.options.core_ghz * 1000.0, 0.0, double{rpc::kRpcMaxCoreMhz});
    p.request.flags = rpc::kRpcFlagWimpy | (static_cast<uint32_t>(mhz + 0.5) << rpc::kRpcFlagCoreMhzShift);
  }
  p.request.request_id = MakeRequestId(im.client->cpu_node(), im.next_counter++);
  p.request.tenant = im.client->tenant();
  p.request.start = start;
  p.request.state.assign(state.begin(), state.end());
  p.done = std::move(done);
  const uint64_t id = p.request.request_id;
  im.pending.emplace(id, std::move(p));
  im.Send(id, false);
}

Result<RpcResult> RpcClient::Call(uint16_t handler, uint64_t start, std::span<const uint8_t> state,
                                  const RpcCallOptions& options) {
  std::optional<Result<RpcResult>> out;
  CallAsync(handler, start, state, options, [&out](Result<RpcResult> r) { out.emplace(std::move(r)); });
  // Every attempt times out, so the loop ends; the bound per wait covers one
  // leg's retry budget.
  const auto budget = impl_->options.request_timeout * (impl_->options.max_attempts + 1) + std::chrono::seconds(1);
  while (!out) {
    Status s = impl_->client->DriveUntil([&] { return out.has_value(); },
                                         std::chrono::duration_cast<std::chrono::milliseconds>(budget));
    if (!out && !s.ok() && impl_->pending.empty()) return s;
  }
  return std::move(*out);
}

void RpcClient::Poll() { impl_->client->Poll(); }  // services this client through its hooks

Status RpcClient::WaitAll(std::chrono::milliseconds timeout) {
  Status s = impl_->client->DriveUntil([&] { return impl_->pending.empty() && impl_->ready.empty(); }, timeout);
  if (!s.ok()) return Status::Timeout(fmt::format("rpc: {} calls still pending", impl_->pending.size()));
  return s;
}

size_t RpcClient::pending() const { return impl_->pending.size(); }
const RpcCounters& RpcClient::counters() const { return impl_->counters; }
Client* RpcClient::client() const { return impl_->client; }

}  // namespace pulse
