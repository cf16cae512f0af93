// The CPU-node side of the RPC baseline.  Each attempt has a request id, a
// timer and a retry budget, like a traversal's (RequestTracker with
// RetryPolicy::Fixed); a reply that stops at a node boundary is re-issued
// under a fresh id to the memory node that owns the next pointer, carrying
// the handler's state.  Callbacks are queued and run outside the fabric's
// handlers.  There is no wait loop here: the RpcClient is an EventSource of
// its Client's EventLoop (src/client/client_internal.h), so one loop
// services both.
#include "pulse/rpc.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "client/client_internal.h"
#include "common/request_tracker.h"
#include "pulse/cluster.h"
#include "protocol/rpc_message.h"

namespace pulse {

using rpc::RpcReply;
using rpc::RpcRequest;

namespace {

// Replies larger than this are malformed (a scan's output is bounded by its
// limit, which the caller chose).
constexpr uint32_t kMaxReplyBytes = 64u << 20;

struct PendingCall {
  RpcRequest request;    // as last sent
  uint32_t node = 0;     // where it was sent
  uint32_t reissues = 0;
  RpcResult result;      // accumulated over the legs
};

}  // namespace

struct RpcClient::Impl final : EventSource {
  explicit Impl(Client* c, const RpcOptions& o)
      : client(c),
        options(o),
        tracker(
            &TrackerClock::Steady(), [this](uint64_t id, PendingCall&, ResendReason) { Send(id, true); },
            [this](uint64_t id, const PendingCall& p, uint32_t attempts) {
              ++counters.timeouts;
              return Status::Timeout(fmt::format(
                  "rpc {:#x}: no reply from memory node {} for start {:#x} after {} attempts of {} ms", id, p.node,
                  p.request.start, attempts, options.request_timeout.count()));
            }) {}

  Client* client = nullptr;
  RpcOptions options;
  uint64_t next_counter = 1;
  RequestTracker<PendingCall, RpcResult> tracker;
  RpcCounters counters;

  RetryPolicy policy() const { return RetryPolicy::Fixed(options.request_timeout, options.max_attempts); }
  net::Worker& worker() { return ClientInternal::worker(*client); }

  void Finish(uint64_t id, Result<RpcResult> r) { tracker.Complete(id, std::move(r)); }

  // Sends the call's request to the owner of its start pointer.  Completes
  // it instead when no node owns the pointer or the owner is down.
  void Send(uint64_t id, bool retransmission) {
    PendingCall& p = *tracker.Find(id);
    const std::optional<uint32_t> owner = client->NodeOf(p.request.start);
    if (!owner) {
      p.result.status = TraversalStatus::kFaultInvalidPointer;
      p.result.next_ptr = p.result.fault_addr = p.request.start;
      p.result.state = p.request.state;
      return Finish(id, std::move(p.result));
    }
    const bool via_switch = options.path == RpcPath::kSwitch;
    const net::EndpointId ep = via_switch ? ClientInternal::switch_endpoint(*client)
                                          : ClientInternal::memnode_endpoint(*client, *owner);
    if (ep == net::kInvalidEndpoint || !worker().IsConnected(ep))
      return Finish(id, Status::Unavailable(fmt::format("rpc: {} (for memory node {}, owner of {:#x}) is unavailable",
                                                        via_switch ? "the switch" : "the memory node", *owner,
                                                        p.request.start)));
    p.node = *owner;
    ++p.result.issues;
    ++counters.requests_sent;
    if (retransmission) {
      ++p.result.retransmissions;
      ++counters.retransmissions;
    }
    Status s = worker().Send(ep, kAmRpcRequest, rpc::EncodeRpcRequest(p.request));
    if (!s.ok()) tracker.ExpireNow(id);  // the timer path retries or fails it
  }

  // Tracks `p` under its request id and sends it.
  void Start(PendingCall p, Callback done) {
    const uint64_t id = p.request.request_id;
    tracker.Track(id, std::move(p), policy(), std::move(done));
    Send(id, false);
  }

  void OnReply(std::span<const uint8_t> payload) {
    Result<RpcReply> decoded = rpc::DecodeRpcReply(payload, kMaxReplyBytes);
    if (!decoded.ok()) {
      ++counters.bad_replies;
      return;
    }
    RpcReply& m = *decoded;
    PendingCall* found = tracker.OnAnswer(m.request_id);
    if (found == nullptr) {
      ++counters.stale_replies;
      return;
    }
    PendingCall& p = *found;
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
      auto [next, done] = tracker.Take(m.request_id);
      if (m.status == TraversalStatus::kNotLocal) {
        ++next.result.node_crossings;
        ++counters.node_crossings;
      } else {
        ++counters.continues;
      }
      ++next.reissues;
      next.request.request_id = MakeRequestId(client->cpu_node(), next_counter++);
      next.request.start = m.next_ptr;
      next.request.state = std::move(m.state);
      return Start(std::move(next), std::move(done));
    }
    r.status = resume ? TraversalStatus::kFaultInvalidPointer : m.status;
    r.state = std::move(m.state);
    r.next_ptr = m.next_ptr;
    r.fault_addr = resume ? m.next_ptr : m.fault_addr;
    Finish(m.request_id, std::move(r));
  }

  // EventSource: re-sends or fails the calls whose attempt timed out; runs
  // the callbacks of finished calls (a callback may start new calls).
  void Service() override { tracker.Service(); }
  time_point NextDeadline() const override { return tracker.NextDeadline(); }
  bool RunReady() override { return tracker.RunReady() > 0; }
  bool has_ready() const override { return tracker.has_ready(); }
  bool awaiting_replies() const override { return !tracker.empty(); }
};

RpcClient::RpcClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RpcClient::~RpcClient() {
  impl_->worker().SetHandler(kAmRpcReply, {});
  ClientInternal::loop(*impl_->client).Remove(impl_.get());
}

Result<std::unique_ptr<RpcClient>> RpcClient::Create(Client* client, const RpcOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("RpcClient: no client");
  if (options.max_attempts == 0) return Status::InvalidArgument("RpcClient: max_attempts must be positive");
  if (options.core_ghz < 0 || options.core_ghz * 1000.0 > rpc::kRpcMaxCoreMhz)
    return Status::InvalidArgument(fmt::format("RpcClient: core_ghz {} is outside [0, {}]", options.core_ghz,
                                               rpc::kRpcMaxCoreMhz / 1000.0));
  auto impl = std::make_unique<Impl>(client, options);
  Impl* raw = impl.get();
  raw->worker().SetHandler(kAmRpcReply, [raw](net::EndpointId, std::span<const uint8_t> p) { raw->OnReply(p); });
  ClientInternal::loop(*client).Add(raw);
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
  im.Start(std::move(p), std::move(done));
}

Result<RpcResult> RpcClient::Call(uint16_t handler, uint64_t start, std::span<const uint8_t> state,
                                  const RpcCallOptions& options) {
  std::optional<Result<RpcResult>> out;
  CallAsync(handler, start, state, options, [&out](Result<RpcResult> r) { out.emplace(std::move(r)); });
  // Every attempt times out, so the loop ends; the bound per wait covers one
  // leg's retry budget.
  const auto budget = impl_->options.request_timeout * (impl_->options.max_attempts + 1) + std::chrono::seconds(1);
  EventLoop& loop = ClientInternal::loop(*impl_->client);
  while (!out) {
    Status s = loop.DriveUntil([&] { return out.has_value(); },
                               std::chrono::duration_cast<std::chrono::milliseconds>(budget));
    if (!out && !s.ok() && impl_->tracker.empty()) return s;
  }
  return std::move(*out);
}

void RpcClient::Poll() { impl_->client->Poll(); }  // the Client's loop services this client too

Status RpcClient::WaitAll(std::chrono::milliseconds timeout) {
  Impl& im = *impl_;
  Status s = ClientInternal::loop(*im.client).DriveUntil([&] { return im.tracker.empty() && !im.tracker.has_ready(); },
                                                         timeout);
  if (!s.ok()) return Status::Timeout(fmt::format("rpc: {} calls still pending", im.tracker.size()));
  return s;
}

size_t RpcClient::pending() const { return impl_->tracker.size(); }
const RpcCounters& RpcClient::counters() const { return impl_->counters; }
Client* RpcClient::client() const { return impl_->client; }

}  // namespace pulse
