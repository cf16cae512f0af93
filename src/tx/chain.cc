// The client side of chain-replicated transactions (include/pulse/tx/chain.h).
// Requests ride the Client's Worker on their own active-message ids, tracked
// like the RPC baseline's calls (RequestTracker: re-sent under the same id,
// which the head answers without running twice); the Chain is an
// EventSource of the Client's loop, so one wait serves both.
#include "pulse/tx/chain.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "client/client_internal.h"
#include "common/request_tracker.h"
#include "pulse/cluster.h"
#include "tx/tx_wire.h"

namespace pulse::tx {
namespace {

struct PendingRequest {
  std::vector<uint8_t> bytes;  // as sent
  bool to_head = true;         // re-sends go to the head of the moment
  uint32_t node = 0;           // else: this member
  // A transaction with writes: once sent, it may commit without this client
  // hearing so (the head died), so giving up is OutcomeUnknown, not an error
  // that says it did not happen.
  bool writes = false;
  bool sent = false;
  uint32_t sent_to = 0;        // the member the last attempt went to (for the give-up message)
};

// The status of a writing transaction given up after it was sent.
Status Unknown(uint64_t id, const std::string& why) {
  return Status::OutcomeUnknown(
      fmt::format("tx: request {:#x} may or may not have committed: {}", id, why));
}

}  // namespace

struct Chain::Impl final : EventSource {
  Impl(Client* c, const ChainOptions& o)
      : client(c),
        options(o),
        tracker(
            &TrackerClock::Steady(), [this](uint64_t id, PendingRequest&, ResendReason) { Send(id, true); },
            [](uint64_t id, const PendingRequest& p, uint32_t attempts) {
              const std::string why =
                  fmt::format("tx: request {:#x} to {} unanswered after {} attempts", id,
                              p.to_head ? fmt::format("the head (the last attempt went to node {})", p.sent_to)
                                        : fmt::format("node {}", p.node),
                              attempts);
              return p.writes ? Unknown(id, why) : Status::Timeout(why);
            }) {}

  Client* client;
  ChainOptions options;
  ChainHandle handle;
  std::map<uint32_t, uint64_t> regions;  // every member's region, dropped ones included
  RequestTracker<PendingRequest, Reply> tracker;
  ChainCounters counters;
  uint64_t next_counter = 1;

  net::Worker& worker() { return ClientInternal::worker(*client); }
  bool Live(uint32_t node) const {
    const net::EndpointId ep = ClientInternal::memnode_endpoint(*client, node);
    return ep != net::kInvalidEndpoint && ClientInternal::worker(*client).IsConnected(ep);
  }
  std::optional<uint32_t> Head() const {
    for (const ChainMember& m : handle.members)
      if (Live(m.node)) return m.node;
    return std::nullopt;
  }
  std::optional<ChainMember> Tail() const {
    for (auto it = handle.members.rbegin(); it != handle.members.rend(); ++it)
      if (Live(it->node)) return *it;
    return std::nullopt;
  }
  Header MakeHeader(Kind kind, uint8_t flags = 0) {
    // Request ids are unique per CPU node (the head remembers answers by id).
    return Header{kind, flags, client->tenant(), MakeRequestId(client->cpu_node(), next_counter++), handle.id};
  }

  void Send(uint64_t id, bool retransmission) {
    PendingRequest& p = *tracker.Find(id);
    std::optional<uint32_t> node = p.to_head ? Head() : std::optional<uint32_t>(p.node);
    const net::EndpointId ep =
        node ? ClientInternal::memnode_endpoint(*client, *node) : net::kInvalidEndpoint;
    if (ep == net::kInvalidEndpoint || !worker().IsConnected(ep)) {
      const std::string why =
          p.to_head ? std::string("no live head in the chain") : fmt::format("memory node {} is unavailable", p.node);
      return tracker.Complete(id, p.writes && p.sent ? Unknown(id, why) : Status::Unavailable("tx: " + why));
    }
    ++counters.messages_sent;
    if (retransmission) {
      ++counters.retransmissions;
      // Whoever gets it now (the same head, or the next live member after
      // the head died) answers a committed transaction with its result.
      if (p.to_head && p.bytes.size() > 1) p.bytes[1] |= kFlagRetry;
    }
    p.sent = true;
    p.sent_to = *node;
    if (!worker().Send(ep, kAmTxRequest, p.bytes).ok()) tracker.ExpireNow(id);
  }

  void Start(uint64_t id, PendingRequest p, std::function<void(Result<Reply>)> done) {
    tracker.Track(id, std::move(p), RetryPolicy::Fixed(options.request_timeout, options.max_attempts), std::move(done));
    Send(id, false);
  }

  void OnReply(std::span<const uint8_t> payload) {
    Result<Reply> r = DecodeReply(payload);
    if (!r.ok()) return;
    if (tracker.OnAnswer(r->request_id) == nullptr) return;  // stale or duplicate
    ++counters.replies;
    const uint64_t id = r->request_id;
    // A member that is not the head yet (the one before it still looks
    // alive to it): the request stays pending and is re-sent on its timer.
    if (r->code == StatusCodeToWire(Status::Code::kUnavailable) && tracker.Find(id)->to_head) return;
    if (r->code != StatusCodeToWire(Status::Code::kOk))
      return tracker.Complete(id, StatusFromWire(r->code, std::move(r->message)));
    tracker.Complete(id, std::move(r).value());
  }

  // One request to `node` (or the head), waited for.
  Result<Reply> Call(PendingRequest request, uint64_t id) {
    std::optional<Result<Reply>> out;
    Start(id, std::move(request), [&out](Result<Reply> r) { out.emplace(std::move(r)); });
    const auto budget = options.request_timeout * (options.max_attempts + 1) + std::chrono::seconds(1);
    EventLoop& loop = ClientInternal::loop(*client);
    while (!out) {
      Status s = loop.DriveUntil([&] { return out.has_value(); },
                                 std::chrono::duration_cast<std::chrono::milliseconds>(budget));
      if (!out && !s.ok() && !tracker.IsPending(id)) return s;
    }
    return std::move(*out);
  }

  Status Configure(uint32_t node, uint32_t joiner, uint64_t joiner_seq) {
    ConfigureBody b;
    b.epoch = handle.epoch;
    b.region_bytes = handle.region_bytes;
    for (const ChainMember& m : handle.members) b.members.push_back(Member{m.node, m.region});
    b.joiner = joiner;
    b.joiner_seq = joiner_seq;
    Header h = MakeHeader(Kind::kConfigure);
    return Call(PendingRequest{EncodeConfigure(h, b), false, node}, h.request_id).status();
  }

  void Service() override { tracker.Service(); }
  time_point NextDeadline() const override { return tracker.NextDeadline(); }
  bool RunReady() override { return tracker.RunReady() > 0; }
  bool has_ready() const override { return tracker.has_ready(); }
};

Chain::Chain(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Chain::~Chain() {
  ClientInternal::worker(*impl_->client).SetHandler(kAmTxReply, {});
  ClientInternal::loop(*impl_->client).Remove(impl_.get());
}

Result<std::unique_ptr<Chain>> Chain::Attach(Client* client, const ChainHandle& handle, const ChainOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("tx: no client");
  if (handle.members.empty()) return Status::InvalidArgument("tx: a chain handle without members");
  if (options.max_attempts == 0) return Status::InvalidArgument("tx: max_attempts must be positive");
  auto impl = std::make_unique<Impl>(client, options);
  impl->handle = handle;
  for (const ChainMember& m : handle.members) impl->regions[m.node] = m.region;
  Impl* raw = impl.get();
  ClientInternal::worker(*client).SetHandler(kAmTxReply,
                                             [raw](net::EndpointId, std::span<const uint8_t> p) { raw->OnReply(p); });
  ClientInternal::loop(*client).Add(raw);
  return std::unique_ptr<Chain>(new Chain(std::move(impl)));
}

Result<std::unique_ptr<Chain>> Chain::Create(Client* client, const ChainOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("tx: no client");
  if (options.replicas.empty() || options.replicas.size() > kMaxMembers)
    return Status::InvalidArgument(fmt::format("tx: replicas: {} given, 1..{} allowed", options.replicas.size(), kMaxMembers));
  if (std::set<uint32_t>(options.replicas.begin(), options.replicas.end()).size() != options.replicas.size())
    return Status::InvalidArgument("tx: replicas: a memory node is named twice");
  if (options.region_bytes == 0 || options.region_bytes % 8 != 0)
    return Status::InvalidArgument("tx: region_bytes must be a positive multiple of 8");
  ChainHandle h;
  h.region_bytes = options.region_bytes;
  h.epoch = 1;
  const std::vector<uint8_t> zero(64 << 10, 0);
  for (uint32_t node : options.replicas) {
    PULSE_ASSIGN_OR_RETURN(uint64_t region, client->Allocate(options.region_bytes, node));
    if (client->NodeOf(region) != node)
      return Status::InvalidArgument(fmt::format(
          "tx: the region for memory node {} landed on another node: the client must allocate with "
          "AllocationPolicy::kPartitioned",
          node));
    for (uint64_t off = 0; off < options.region_bytes; off += zero.size())
      PULSE_RETURN_IF_ERROR(
          client->Write(region + off, zero.data(), std::min<uint64_t>(zero.size(), options.region_bytes - off)));
    h.members.push_back(ChainMember{node, region});
  }
  h.id = h.members.front().region;
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<Chain> chain, Attach(client, h, options));
  // The tail first, so that nobody forwards to a member not yet configured.
  for (auto it = h.members.rbegin(); it != h.members.rend(); ++it)
    PULSE_RETURN_IF_ERROR(chain->impl_->Configure(it->node, UINT32_MAX, 0));
  return chain;
}

const ChainHandle& Chain::handle() const { return impl_->handle; }
const ChainCounters& Chain::counters() const { return impl_->counters; }
size_t Chain::pending() const { return impl_->tracker.size(); }

void Chain::ExecuteAsync(const Transaction& tx, Callback done) {
  Impl& im = *impl_;
  ++im.counters.transactions;
  ExecuteBody b;
  for (const TxRead& r : tx.reads) b.reads.push_back(ReadOp{r.offset, r.length});
  for (const TxWrite& w : tx.writes) b.writes.push_back(WriteOp{w.offset, w.data});
  Header h = im.MakeHeader(Kind::kExecute);
  im.Start(h.request_id, PendingRequest{EncodeExecute(h, b), true, 0, !b.writes.empty()},
           [&im, done = std::move(done)](Result<Reply> r) {
             if (!r.ok()) {
               ++im.counters.errors;
               return done(r.status());
             }
             done(TxOutcome{r->seq, std::move(r->values)});
           });
}

Status Chain::WaitAll(std::chrono::milliseconds timeout) {
  Impl& im = *impl_;
  Status s = ClientInternal::loop(*im.client).DriveUntil(
      [&] { return im.tracker.empty() && !im.tracker.has_ready(); }, timeout);
  if (!s.ok()) return Status::Timeout(fmt::format("tx: {} requests still pending", im.tracker.size()));
  return s;
}

Result<TxOutcome> Chain::Execute(const Transaction& tx) {
  std::optional<Result<TxOutcome>> out;
  ExecuteAsync(tx, [&out](Result<TxOutcome> r) { out.emplace(std::move(r)); });
  const auto budget = impl_->options.request_timeout * (impl_->options.max_attempts + 1) + std::chrono::seconds(1);
  Status s = ClientInternal::loop(*impl_->client).DriveUntil(
      [&] { return out.has_value(); }, std::chrono::duration_cast<std::chrono::milliseconds>(budget));
  if (!out) return s.ok() ? Status::Timeout("tx: no answer") : s;
  return std::move(*out);
}

Result<TxOutcome> Chain::ExecuteHyperLoop(const Transaction& tx) {
  Impl& im = *impl_;
  TxOutcome out;
  for (const TxRead& r : tx.reads) {
    PULSE_ASSIGN_OR_RETURN(std::vector<uint8_t> v, Read(r.offset, r.length));
    out.values.push_back(std::move(v));
  }
  for (const TxWrite& w : tx.writes) {
    ExecuteBody b;
    b.writes.push_back(WriteOp{w.offset, w.data});
    Header h = im.MakeHeader(Kind::kExecute, kFlagNoLock);
    ++im.counters.transactions;
    Result<Reply> r = im.Call(PendingRequest{EncodeExecute(h, b), true, 0, true}, h.request_id);
    if (!r.ok()) {
      ++im.counters.errors;
      return r.status();
    }
    out.seq = r->seq;
  }
  return out;
}

Result<std::vector<uint8_t>> Chain::Read(uint64_t offset, uint32_t length) {
  std::optional<ChainMember> tail = impl_->Tail();
  if (!tail) return Status::Unavailable("tx: no live member to read from");
  return ReadReplica(tail->node, offset, length);
}

Result<std::vector<uint8_t>> Chain::ReadReplica(uint32_t node, uint64_t offset, uint32_t length) {
  auto it = impl_->regions.find(node);
  if (it == impl_->regions.end()) return Status::InvalidArgument(fmt::format("tx: node {} holds no replica", node));
  if (offset > impl_->handle.region_bytes || length > impl_->handle.region_bytes - offset)
    return Status::OutOfRange(fmt::format("tx: read of {} bytes at {} is outside the region", length, offset));
  std::vector<uint8_t> out(length);
  ++impl_->counters.one_sided_reads;
  PULSE_RETURN_IF_ERROR(impl_->client->Read(it->second + offset, out.data(), length));
  return out;
}

Result<uint64_t> Chain::LastLogged(uint32_t node) {
  Header h = impl_->MakeHeader(Kind::kStatus);
  PULSE_ASSIGN_OR_RETURN(Reply r, impl_->Call(PendingRequest{EncodeStatus(h), false, node}, h.request_id));
  return r.seq;
}

std::vector<uint32_t> Chain::LiveMembers() const {
  std::vector<uint32_t> out;
  for (const ChainMember& m : impl_->handle.members)
    if (impl_->Live(m.node)) out.push_back(m.node);
  return out;
}

Status Chain::Refresh() {
  Impl& im = *impl_;
  std::vector<ChainMember> live;
  for (const ChainMember& m : im.handle.members)
    if (im.Live(m.node)) live.push_back(m);
  if (live.size() == im.handle.members.size()) return Status::Ok();
  if (live.empty()) return Status::Unavailable("tx: every member of the chain is down");
  im.handle.members = std::move(live);
  ++im.handle.epoch;
  for (auto it = im.handle.members.rbegin(); it != im.handle.members.rend(); ++it)
    PULSE_RETURN_IF_ERROR(im.Configure(it->node, UINT32_MAX, 0));
  return Status::Ok();
}

Status Chain::Rejoin(uint32_t node) {
  Impl& im = *impl_;
  auto region = im.regions.find(node);
  if (region == im.regions.end()) return Status::InvalidArgument(fmt::format("tx: node {} was never a member", node));
  for (const ChainMember& m : im.handle.members)
    if (m.node == node) return Status::InvalidArgument(fmt::format("tx: node {} is a member already", node));
  // A one-sided read first: it reconnects this client to a restarted node.
  PULSE_RETURN_IF_ERROR(ReadReplica(node, 0, 8).status());
  PULSE_ASSIGN_OR_RETURN(uint64_t have, LastLogged(node));
  im.handle.members.push_back(ChainMember{node, region->second});
  ++im.handle.epoch;
  // The joiner first (it must know the chain before records reach it), then
  // the others from the tail back; its predecessor backfills it.
  for (auto it = im.handle.members.rbegin(); it != im.handle.members.rend(); ++it)
    PULSE_RETURN_IF_ERROR(im.Configure(it->node, node, have));
  return Status::Ok();
}

}  // namespace pulse::tx
