// The replica of chain-replicated transactions (tx_replica.h).
#include "tx/tx_replica.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>

#include <fmt/format.h>

#include "node/node_tenant.h"
#include "tx/tx_log.h"
#include "tx/tx_wire.h"

namespace pulse::tx {
namespace {

constexpr uint64_t kLockBlock = 64;          // a key: one 64-byte block of the region
constexpr size_t kRememberedReplies = 65536;  // answers kept for clients' re-sends

// A log record's payload: u64 chain, u32 tenant, u64 seq, u64 region, then
// the record `[n][(offset, len, data) x n]`.
constexpr size_t kRecordHeader = 8 + 4 + 8 + 8;

struct Counters {
  uint64_t executes = 0, commits = 0, applied = 0, reads = 0;
  uint64_t forwards_out = 0, forwards_in = 0, acks_out = 0, acks_in = 0, replies = 0;
  uint64_t duplicates = 0, early = 0, backfilled_out = 0, backfilled_in = 0, replayed = 0;
  uint64_t lock_waits = 0, rerouted = 0, members_skipped = 0;
  uint64_t bad_count = 0, bad_length = 0, trailing = 0, bad_header = 0, out_of_range = 0;
  uint64_t refused = 0, not_head = 0, unknown_chain = 0, configures = 0, errors = 0;
};

struct Pending {  // logged here, forwarded, waiting for the successor's ack
  std::vector<WriteOp> writes;
  net::EndpointId upstream = net::kInvalidEndpoint;  // predecessor, or the client at the head
  bool client = false;                               // upstream is the client (this is the head)
  uint64_t request_id = 0;
  std::vector<std::vector<uint8_t>> values;          // the reads' values (head)
  std::vector<uint64_t> keys;                        // locks held (head)
  uint32_t sent_to = UINT32_MAX;                     // the member it was forwarded to
};

struct Waiting {  // head: a transaction queued behind its locks
  net::EndpointId from = net::kInvalidEndpoint;
  uint64_t request_id = 0;
  ExecuteBody body;
  std::vector<uint64_t> keys;
  uint32_t blocked = 0;
};

struct Early {  // a forward ahead of the next sequence number
  net::EndpointId from = net::kInvalidEndpoint;
  bool backfill = false;
  std::vector<WriteOp> writes;
};

struct Chain {
  TenantId tenant = 0;
  uint64_t region = 0;  // this replica's region
  uint64_t region_bytes = 0;
  uint32_t epoch = 0;
  bool configured = false;
  std::vector<Member> members;
  std::set<uint32_t> dead;
  uint64_t last_logged = 0;
  std::map<uint64_t, std::vector<uint8_t>> history;  // seq -> record
  std::map<uint64_t, Pending> pending;
  std::map<uint64_t, Early> early;
  // head
  std::map<uint64_t, std::deque<uint64_t>> locks;  // key -> waiting ids, the holder first
  std::map<uint64_t, Waiting> waiting;
  uint64_t next_wait = 1;
  std::deque<uint64_t> ready;
  std::map<uint64_t, uint64_t> in_flight;        // client request id -> seq (or 0 while waiting)
  std::map<uint64_t, Reply> answered;            // client request id -> its answer
  std::deque<uint64_t> answered_order;
};

class TxReplica final : public memnode::MemNodeExtension {
 public:
  TxReplica(const memnode::ExtensionContext& ctx, TxReplicaOptions options)
      : ctx_(ctx), options_(std::move(options)) {}
  ~TxReplica() override {
    log_.reset();
    if (!options_.log_path.empty() && opened_) ::unlink(options_.log_path.c_str());
  }

  uint16_t request_am() const override { return kAmTxRequest; }
  uint16_t reply_am() const override { return kAmTxReply; }
  std::optional<std::vector<uint8_t>> Handle(std::span<const uint8_t>, const memnode::TenantCheck&) override {
    return std::nullopt;  // HandleFrom is what the node calls
  }
  std::optional<std::vector<uint8_t>> HandleFrom(net::EndpointId from, std::span<const uint8_t> payload,
                                                 const memnode::TenantCheck& authorize) override {
    std::span<const uint8_t> body;
    Result<Header> h = DecodeHeader(payload, &body);
    if (!h.ok()) {
      ++c_.bad_header;
      return std::nullopt;  // too malformed to name a request to answer
    }
    // The tenant is proven here, where the connection's check is at hand.
    Status who = authorize(h->tenant);
    inputs_.push_back(Input{from, *h, std::vector<uint8_t>(body.begin(), body.end()), who});
    return std::nullopt;
  }

  bool Poll() override;
  void OnDisconnect(net::EndpointId ep) override {
    auto it = peer_node_.find(ep);
    if (it == peer_node_.end()) return;
    const uint32_t node = it->second;
    peer_ep_.erase(node);
    peer_node_.erase(it);
    for (auto& [id, chain] : chains_) MarkDead(chain, node);
  }

  std::string stats_key() const override { return "tx"; }
  nlohmann::json Stats() const override;
  std::string StartupLine() const override { return "tx: chain replica, log " + options_.log_path; }

 private:
  struct Input {
    net::EndpointId from;
    Header header;
    std::vector<uint8_t> body;
    Status authorized;
  };
  struct Out {
    net::EndpointId ep;
    uint16_t am;
    std::vector<uint8_t> bytes;
  };

  void OpenLog();
  void Dispatch(Input& in);
  void OnExecute(Input& in);
  void OnForward(Input& in);
  void OnAck(Input& in);
  void OnConfigure(Input& in);
  void OnStatus(Input& in);

  bool IsPeer(net::EndpointId ep) const {
    Result<node::ConnectionTenant> t = node::TenantOf(*ctx_.worker, ep);
    return t.ok() && t->any;
  }
  int Position(const Chain& c) const {
    for (size_t i = 0; i < c.members.size(); ++i)
      if (c.members[i].node == ctx_.node) return static_cast<int>(i);
    return -1;
  }
  bool IsHead(const Chain& c) const {
    for (const Member& m : c.members) {
      if (m.node == ctx_.node) return true;
      if (c.dead.count(m.node) == 0) return false;
    }
    return false;
  }
  void MarkDead(Chain& c, uint32_t node) {
    if (node == ctx_.node || !c.dead.insert(node).second) return;
    ++c_.members_skipped;
    reroute_ = true;
  }
  // The connection to memory node `node` (opened here, outside handlers).
  Result<net::EndpointId> PeerEp(uint32_t node) {
    if (auto it = peer_ep_.find(node); it != peer_ep_.end() && ctx_.worker->IsConnected(it->second))
      return it->second;
    PULSE_ASSIGN_OR_RETURN(net::EndpointId ep, ctx_.peer(node));
    peer_ep_[node] = ep;
    peer_node_[ep] = node;
    return ep;
  }
  Status CheckSpan(const Chain& c, uint64_t offset, uint64_t length) const {
    if (offset > c.region_bytes || length > c.region_bytes - offset)
      return Status::OutOfRange(fmt::format("tx: offset {} + length {} is outside the chain's region of {} bytes",
                                            offset, length, c.region_bytes));
    return Status::Ok();
  }
  // The host bytes of [region + offset, +length) if `tenant` may `perm` them.
  Result<uint8_t*> Locate(TenantId tenant, uint64_t region, uint64_t offset, uint64_t length, uint8_t perm) const {
    const uint64_t addr = region + offset;
    const Range* r = ctx_.table->Find(addr);
    if (r == nullptr || !r->ContainsSpan(addr, length))
      return Status::OutOfRange(fmt::format("tx: [{:#x}, +{}) is in no allocation of node {}", addr, length, ctx_.node));
    if (r->owner != tenant || (r->perms & perm) != perm)
      return Status::PermissionDenied(fmt::format("tx: [{:#x}, +{}) is not tenant {}'s to {}", addr, length, tenant,
                                                  perm == kPermWrite ? "write" : "read"));
    return r->Translate(addr);
  }
  Status Apply(const Chain& c, const std::vector<WriteOp>& writes) {
    for (const WriteOp& w : writes) {
      PULSE_ASSIGN_OR_RETURN(uint8_t * dst, Locate(c.tenant, c.region, w.offset, w.data.size(), kPermWrite));
      std::memcpy(dst, w.data.data(), w.data.size());
    }
    ++c_.applied;
    return Status::Ok();
  }
  // Logs `writes` as `seq` of chain `id` (durable at the pass's sync).
  Status Log(uint64_t id, Chain& c, uint64_t seq, const std::vector<WriteOp>& writes) {
    std::vector<uint8_t> rec(kRecordHeader);
    std::memcpy(rec.data(), &id, 8);
    std::memcpy(rec.data() + 8, &c.tenant, 4);
    std::memcpy(rec.data() + 12, &seq, 8);
    std::memcpy(rec.data() + 20, &c.region, 8);
    std::vector<uint8_t> body;
    AppendRecord(writes, &body);
    rec.insert(rec.end(), body.begin(), body.end());
    if (log_ == nullptr) return Status::FailedPrecondition("tx: the log is not open");
    PULSE_RETURN_IF_ERROR(log_->Append(rec));
    c.last_logged = seq;
    c.history[seq] = std::move(body);
    while (c.history.size() > options_.history_records) c.history.erase(c.history.begin());
    return Status::Ok();
  }
  void Send(net::EndpointId ep, uint16_t am, std::vector<uint8_t> bytes) {
    outputs_.push_back(Out{ep, am, std::move(bytes)});
  }
  void ReplyTo(net::EndpointId ep, uint64_t request_id, const Status& s, uint64_t seq = 0,
               std::vector<std::vector<uint8_t>> values = {}) {
    Reply r;
    r.request_id = request_id;
    r.code = StatusCodeToWire(s.code());
    r.seq = seq;
    r.values = std::move(values);
    if (!s.ok()) {
      r.message = s.message();
      ++c_.errors;
    }
    ++c_.replies;
    Send(ep, kAmTxReply, EncodeReply(r));
  }
  void SendAck(uint64_t id, const Chain& c, net::EndpointId ep, uint64_t seq) {
    Header h{Kind::kAck, 0, c.tenant, 0, id};
    ++c_.acks_out;
    Send(ep, kAmTxRequest, EncodeAck(h, AckBody{seq, StatusCodeToWire(Status::Code::kOk)}));
  }
  // Sends pending `seq` to the next live member, or commits it here if
  // there is none (this node is the tail).
  void ForwardOrCommit(uint64_t id, Chain& c, uint64_t seq);
  void Commit(uint64_t id, Chain& c, uint64_t seq);
  void Finish(uint64_t id, Chain& c, uint64_t seq, Pending p);
  void ProcessForward(uint64_t id, Chain& c, uint64_t seq, Early e);
  void StartReady(uint64_t id, Chain& c);
  void Release(Chain& c, const std::vector<uint64_t>& keys);
  void Remember(Chain& c, const Reply& r);

  memnode::ExtensionContext ctx_;
  TxReplicaOptions options_;
  std::unique_ptr<TxLog> log_;
  bool opened_ = false;
  bool reroute_ = false;
  std::deque<Input> inputs_;
  std::vector<Out> outputs_;
  std::map<uint64_t, Chain> chains_;
  std::map<uint32_t, net::EndpointId> peer_ep_;
  std::map<net::EndpointId, uint32_t> peer_node_;
  Counters c_;
  std::string log_error_;
};

void TxReplica::OpenLog() {
  opened_ = true;
  if (options_.log_path.empty()) {
    log_error_ = "no log path";
    return;
  }
  const bool keep = ctx_.pool_reattached && ctx_.pool_reattached();
  Result<std::unique_ptr<TxLog>> log = TxLog::Open(options_.log_path, keep, [this](std::span<const uint8_t> p) {
    if (p.size() < kRecordHeader) return;
    uint64_t id = 0, seq = 0, region = 0;
    TenantId tenant = 0;
    std::memcpy(&id, p.data(), 8);
    std::memcpy(&tenant, p.data() + 8, 4);
    std::memcpy(&seq, p.data() + 12, 8);
    std::memcpy(&region, p.data() + 20, 8);
    size_t used = 0;
    Malformed m{};
    Result<std::vector<WriteOp>> w = DecodeRecord(p.subspan(kRecordHeader), &used, &m);
    if (!w.ok()) return;
    Chain& c = chains_[id];
    c.tenant = tenant;
    c.region = region;
    if (seq <= c.last_logged) return;
    if (Apply(c, *w).ok()) ++c_.replayed;
    c.last_logged = seq;
    c.history[seq] = std::vector<uint8_t>(p.begin() + kRecordHeader, p.end());
    while (c.history.size() > options_.history_records) c.history.erase(c.history.begin());
  });
  if (!log.ok()) {
    log_error_ = log.status().ToString();
    return;
  }
  log_ = std::move(log).value();
}

bool TxReplica::Poll() {
  if (!opened_) OpenLog();
  if (inputs_.empty() && !reroute_ && outputs_.empty()) return false;
  while (!inputs_.empty()) {
    Input in = std::move(inputs_.front());
    inputs_.pop_front();
    Dispatch(in);
  }
  if (reroute_) {
    reroute_ = false;
    for (auto& [id, c] : chains_) {
      std::vector<uint64_t> seqs;
      for (const auto& [seq, p] : c.pending)
        if (c.dead.count(p.sent_to) != 0) seqs.push_back(seq);
      for (uint64_t seq : seqs) {
        ++c_.rerouted;
        ForwardOrCommit(id, c, seq);
      }
    }
  }
  // Transactions whose locks were released this pass (by acknowledgements).
  for (auto& [id, c] : chains_)
    if (!c.ready.empty()) StartReady(id, c);
  // Group commit: what this pass logged is durable before anything leaves.
  if (log_ != nullptr && log_->dirty() && options_.sync) {
    Status s = log_->Sync();
    if (!s.ok()) log_error_ = s.ToString();
  }
  for (Out& o : outputs_) (void)ctx_.worker->Send(o.ep, o.am, std::move(o.bytes));
  outputs_.clear();
  return !inputs_.empty();
}

void TxReplica::Dispatch(Input& in) {
  switch (in.header.kind) {
    case Kind::kExecute:
      return OnExecute(in);
    case Kind::kForward:
      return OnForward(in);
    case Kind::kAck:
      return OnAck(in);
    case Kind::kConfigure:
      return OnConfigure(in);
    case Kind::kStatus:
      return OnStatus(in);
  }
}

void TxReplica::OnExecute(Input& in) {
  const Header& h = in.header;
  ++c_.executes;
  if (!in.authorized.ok()) {
    ++c_.refused;
    return ReplyTo(in.from, h.request_id, in.authorized);
  }
  auto it = chains_.find(h.chain);
  if (it == chains_.end() || !it->second.configured) {
    ++c_.unknown_chain;
    return ReplyTo(in.from, h.request_id,
                   Status::FailedPrecondition(fmt::format("tx: chain {:#x} is not configured on node {}", h.chain,
                                                          ctx_.node)));
  }
  Chain& c = it->second;
  if (c.tenant != h.tenant) {
    ++c_.refused;
    return ReplyTo(in.from, h.request_id,
                   Status::PermissionDenied(fmt::format("tx: chain {:#x} belongs to tenant {}, not tenant {}", h.chain,
                                                        c.tenant, h.tenant)));
  }
  if (!IsHead(c)) {
    ++c_.not_head;
    return ReplyTo(in.from, h.request_id,
                   Status::FailedPrecondition(fmt::format("tx: node {} is not the head of chain {:#x}", ctx_.node, h.chain)));
  }
  // A client's re-send: answered again, or already on its way.
  if (auto a = c.answered.find(h.request_id); a != c.answered.end()) {
    ++c_.duplicates;
    Send(in.from, kAmTxReply, EncodeReply(a->second));
    return;
  }
  if (c.in_flight.count(h.request_id) != 0) {
    ++c_.duplicates;
    return;
  }
  Malformed bad = Malformed::kNone;
  Result<ExecuteBody> body = DecodeExecute(in.body, &bad);
  if (!body.ok()) {
    if (bad == Malformed::kCount) ++c_.bad_count;
    else if (bad == Malformed::kLength) ++c_.bad_length;
    else ++c_.trailing;
    return ReplyTo(in.from, h.request_id, body.status());
  }
  for (const ReadOp& r : body->reads) {
    Status s = CheckSpan(c, r.offset, r.length);
    if (!s.ok()) {
      ++c_.out_of_range;
      return ReplyTo(in.from, h.request_id, s);
    }
  }
  for (const WriteOp& w : body->writes) {
    Status s = CheckSpan(c, w.offset, w.data.size());
    if (!s.ok()) {
      ++c_.out_of_range;
      return ReplyTo(in.from, h.request_id, s);
    }
  }
  Waiting w;
  w.from = in.from;
  w.request_id = h.request_id;
  if ((h.flags & kFlagNoLock) == 0) {
    std::set<uint64_t> keys;
    for (const ReadOp& r : body->reads)
      for (uint64_t k = r.offset / kLockBlock; k <= (r.offset + r.length - 1) / kLockBlock; ++k) keys.insert(k);
    for (const WriteOp& wr : body->writes)
      for (uint64_t k = wr.offset / kLockBlock; k <= (wr.offset + wr.data.size() - 1) / kLockBlock; ++k) keys.insert(k);
    w.keys.assign(keys.begin(), keys.end());
  }
  w.body = std::move(body).value();
  const uint64_t wid = c.next_wait++;
  for (uint64_t k : w.keys) {
    std::deque<uint64_t>& q = c.locks[k];
    q.push_back(wid);
    if (q.size() > 1) ++w.blocked;
  }
  if (w.blocked > 0) ++c_.lock_waits;
  const bool go = w.blocked == 0;
  c.in_flight[h.request_id] = 0;
  c.waiting.emplace(wid, std::move(w));
  if (go) c.ready.push_back(wid);
  StartReady(h.chain, c);
}

void TxReplica::StartReady(uint64_t id, Chain& c) {
  while (!c.ready.empty()) {
    const uint64_t wid = c.ready.front();
    c.ready.pop_front();
    auto node = c.waiting.extract(wid);
    Waiting& w = node.mapped();
    Pending p;
    p.upstream = w.from;
    p.client = true;
    p.request_id = w.request_id;
    p.keys = std::move(w.keys);
    Status s;
    for (const ReadOp& r : w.body.reads) {
      Result<uint8_t*> src = Locate(c.tenant, c.region, r.offset, r.length, kPermRead);
      if (!src.ok()) {
        s = src.status();
        break;
      }
      p.values.emplace_back(*src, *src + r.length);
      ++c_.reads;
    }
    if (s.ok() && !w.body.writes.empty()) {
      // Every write must be the tenant's before anything is logged.
      for (const WriteOp& wr : w.body.writes) {
        Result<uint8_t*> dst = Locate(c.tenant, c.region, wr.offset, wr.data.size(), kPermWrite);
        if (!dst.ok()) {
          s = dst.status();
          break;
        }
      }
    }
    if (!s.ok() || w.body.writes.empty()) {
      // Refused, or read-only: answered at once, nothing logged.
      Release(c, p.keys);
      c.in_flight.erase(p.request_id);
      if (!s.ok()) {
        ++c_.refused;
        ReplyTo(p.upstream, p.request_id, s);
      } else {
        Reply r{p.request_id, StatusCodeToWire(Status::Code::kOk), c.last_logged, std::move(p.values), {}};
        ++c_.replies;
        Send(p.upstream, kAmTxReply, EncodeReply(r));
      }
      continue;
    }
    const uint64_t seq = c.last_logged + 1;
    s = Log(id, c, seq, w.body.writes);
    if (!s.ok()) {
      Release(c, p.keys);
      c.in_flight.erase(p.request_id);
      ReplyTo(p.upstream, p.request_id, s);
      continue;
    }
    c.in_flight[p.request_id] = seq;
    p.writes = std::move(w.body.writes);
    c.pending.emplace(seq, std::move(p));
    ForwardOrCommit(id, c, seq);
  }
}

void TxReplica::ForwardOrCommit(uint64_t id, Chain& c, uint64_t seq) {
  Pending& p = c.pending.at(seq);
  const int me = Position(c);
  for (size_t i = static_cast<size_t>(me) + 1; me >= 0 && i < c.members.size(); ++i) {
    const Member& m = c.members[i];
    if (c.dead.count(m.node) != 0) continue;
    Result<net::EndpointId> ep = PeerEp(m.node);
    if (!ep.ok()) {
      MarkDead(c, m.node);
      continue;
    }
    p.sent_to = m.node;
    Header h{Kind::kForward, 0, c.tenant, 0, id};
    ++c_.forwards_out;
    Send(*ep, kAmTxRequest, EncodeForward(h, ForwardBody{seq, p.writes}));
    return;
  }
  Commit(id, c, seq);  // no live member after this one: this is the tail
}

void TxReplica::Commit(uint64_t id, Chain& c, uint64_t seq) {
  auto node = c.pending.extract(seq);
  ++c_.commits;
  Finish(id, c, seq, std::move(node.mapped()));
}

// Applies `seq` here and passes the acknowledgement up.
void TxReplica::Finish(uint64_t id, Chain& c, uint64_t seq, Pending p) {
  Status s = Apply(c, p.writes);
  if (!s.ok()) log_error_ = s.ToString();
  if (!p.client) return SendAck(id, c, p.upstream, seq);
  Release(c, p.keys);
  c.in_flight.erase(p.request_id);
  Reply r{p.request_id, StatusCodeToWire(Status::Code::kOk), seq, std::move(p.values), {}};
  Remember(c, r);
  ++c_.replies;
  Send(p.upstream, kAmTxReply, EncodeReply(r));
}

void TxReplica::Remember(Chain& c, const Reply& r) {
  c.answered[r.request_id] = r;
  c.answered_order.push_back(r.request_id);
  while (c.answered_order.size() > kRememberedReplies) {
    c.answered.erase(c.answered_order.front());
    c.answered_order.pop_front();
  }
}

void TxReplica::Release(Chain& c, const std::vector<uint64_t>& keys) {
  for (uint64_t k : keys) {
    auto it = c.locks.find(k);
    if (it == c.locks.end() || it->second.empty()) continue;
    it->second.pop_front();  // this transaction held it
    if (it->second.empty()) {
      c.locks.erase(it);
      continue;
    }
    auto next = c.waiting.find(it->second.front());
    if (next != c.waiting.end() && --next->second.blocked == 0) c.ready.push_back(next->first);
  }
}

void TxReplica::OnForward(Input& in) {
  const Header& h = in.header;
  ++c_.forwards_in;
  if (!IsPeer(in.from)) {
    ++c_.refused;  // only memory nodes forward
    return;
  }
  Malformed bad = Malformed::kNone;
  Result<ForwardBody> f = DecodeForward(in.body, &bad);
  if (!f.ok()) {
    ++c_.bad_length;
    return;
  }
  auto it = chains_.find(h.chain);
  if (it == chains_.end() || !it->second.configured) {
    // Not (yet) a member here: the sender skips this node.
    ++c_.unknown_chain;
    Header ah{Kind::kAck, 0, h.tenant, 0, h.chain};
    ++c_.acks_out;
    Send(in.from, kAmTxRequest,
         EncodeAck(ah, AckBody{f->seq, StatusCodeToWire(Status::Code::kFailedPrecondition)}));
    return;
  }
  Chain& c = it->second;
  const bool backfill = (h.flags & kFlagBackfill) != 0;
  if (backfill) ++c_.backfilled_in;
  if (f->seq <= c.last_logged) {
    ++c_.duplicates;
    if (backfill) return;
    if (auto p = c.pending.find(f->seq); p != c.pending.end()) {
      p->second.upstream = in.from;  // its old predecessor died: answer the new one
    } else {
      SendAck(h.chain, c, in.from, f->seq);  // committed here already
    }
    return;
  }
  Early e{in.from, backfill, std::move(f->writes)};
  if (f->seq > c.last_logged + 1) {
    ++c_.early;
    c.early[f->seq] = std::move(e);
    return;
  }
  ProcessForward(h.chain, c, f->seq, std::move(e));
  while (!c.early.empty() && c.early.begin()->first == c.last_logged + 1) {
    auto node = c.early.extract(c.early.begin());
    ProcessForward(h.chain, c, node.key(), std::move(node.mapped()));
  }
}

void TxReplica::ProcessForward(uint64_t id, Chain& c, uint64_t seq, Early e) {
  Status s = Log(id, c, seq, e.writes);
  if (!s.ok()) {
    log_error_ = s.ToString();
    return;
  }
  if (e.backfill) {
    (void)Apply(c, e.writes);
    return;
  }
  Pending p;
  p.writes = std::move(e.writes);
  p.upstream = e.from;
  c.pending.emplace(seq, std::move(p));
  ForwardOrCommit(id, c, seq);
}

void TxReplica::OnAck(Input& in) {
  ++c_.acks_in;
  if (!IsPeer(in.from)) {
    ++c_.refused;
    return;
  }
  Result<AckBody> a = DecodeAck(in.body);
  if (!a.ok()) {
    ++c_.bad_length;
    return;
  }
  auto it = chains_.find(in.header.chain);
  if (it == chains_.end()) return;
  Chain& c = it->second;
  if (a->code != StatusCodeToWire(Status::Code::kOk)) {
    // The successor is not a member: skip it; what went there is re-sent.
    if (auto n = peer_node_.find(in.from); n != peer_node_.end()) MarkDead(c, n->second);
    return;
  }
  auto p = c.pending.find(a->seq);
  if (p == c.pending.end()) {
    ++c_.duplicates;
    return;
  }
  auto node = c.pending.extract(p);
  Finish(in.header.chain, c, a->seq, std::move(node.mapped()));
}

void TxReplica::OnConfigure(Input& in) {
  const Header& h = in.header;
  ++c_.configures;
  if (!in.authorized.ok()) {
    ++c_.refused;
    return ReplyTo(in.from, h.request_id, in.authorized);
  }
  Result<ConfigureBody> b = DecodeConfigure(in.body);
  if (!b.ok()) return ReplyTo(in.from, h.request_id, b.status());
  const Member* mine = nullptr;
  for (const Member& m : b->members)
    if (m.node == ctx_.node) mine = &m;
  if (mine == nullptr)
    return ReplyTo(in.from, h.request_id,
                   Status::InvalidArgument(fmt::format("tx: configure: node {} is not a member", ctx_.node)));
  Result<uint8_t*> region = Locate(h.tenant, mine->region, 0, b->region_bytes, kPermReadWrite);
  if (!region.ok() || b->region_bytes == 0) {
    ++c_.refused;
    return ReplyTo(in.from, h.request_id, region.ok() ? Status::InvalidArgument("tx: configure: an empty region")
                                                       : region.status());
  }
  Chain& c = chains_[h.chain];
  if (c.configured && c.tenant != h.tenant) {
    ++c_.refused;
    return ReplyTo(in.from, h.request_id,
                   Status::PermissionDenied(fmt::format("tx: chain {:#x} belongs to tenant {}", h.chain, c.tenant)));
  }
  if (c.configured && b->epoch < c.epoch)
    return ReplyTo(in.from, h.request_id,
                   Status::FailedPrecondition(fmt::format("tx: configure: epoch {} is older than {}", b->epoch, c.epoch)));
  if (c.configured && b->epoch == c.epoch) return ReplyTo(in.from, h.request_id, Status::Ok(), c.last_logged);
  // Backfill a rejoining successor from this replica's history.
  const int me = [&] {
    for (size_t i = 0; i < b->members.size(); ++i)
      if (b->members[i].node == ctx_.node) return static_cast<int>(i);
    return -1;
  }();
  const bool feed = b->joiner != UINT32_MAX && static_cast<size_t>(me) + 1 < b->members.size() &&
                    b->members[me + 1].node == b->joiner;
  if (feed && b->joiner_seq < c.last_logged &&
      (c.history.empty() || c.history.begin()->first > b->joiner_seq + 1))
    return ReplyTo(in.from, h.request_id,
                   Status::FailedPrecondition(fmt::format(
                       "tx: node {} no longer holds the records after {} that node {} needs", ctx_.node,
                       b->joiner_seq, b->joiner)));
  c.tenant = h.tenant;
  c.region = mine->region;
  c.region_bytes = b->region_bytes;
  c.epoch = b->epoch;
  c.members = b->members;
  c.dead.clear();
  c.configured = true;
  if (feed) {
    Result<net::EndpointId> ep = PeerEp(b->joiner);
    if (!ep.ok()) return ReplyTo(in.from, h.request_id, ep.status());
    for (auto r = c.history.upper_bound(b->joiner_seq); r != c.history.end(); ++r) {
      size_t used = 0;
      Malformed m{};
      Result<std::vector<WriteOp>> w = DecodeRecord(r->second, &used, &m);
      if (!w.ok()) continue;
      Header fh{Kind::kForward, kFlagBackfill, c.tenant, 0, h.chain};
      ++c_.backfilled_out;
      Send(*ep, kAmTxRequest, EncodeForward(fh, ForwardBody{r->first, std::move(w).value()}));
    }
  }
  ReplyTo(in.from, h.request_id, Status::Ok(), c.last_logged);
}

void TxReplica::OnStatus(Input& in) {
  const Header& h = in.header;
  if (!in.authorized.ok()) return ReplyTo(in.from, h.request_id, in.authorized);
  auto it = chains_.find(h.chain);
  if (it != chains_.end() && it->second.tenant != h.tenant)
    return ReplyTo(in.from, h.request_id, Status::PermissionDenied("tx: status: another tenant's chain"));
  ReplyTo(in.from, h.request_id, Status::Ok(), it == chains_.end() ? 0 : it->second.last_logged);
}

nlohmann::json TxReplica::Stats() const {
  nlohmann::json chains = nlohmann::json::array();
  for (const auto& [id, c] : chains_)
    chains.push_back({{"chain", id},
                      {"tenant", c.tenant},
                      {"epoch", c.epoch},
                      {"configured", c.configured},
                      {"last_logged", c.last_logged},
                      {"pending", c.pending.size()},
                      {"waiting", c.waiting.size()}});
  const TxLogCounters lc = log_ != nullptr ? log_->counters() : TxLogCounters{};
  return {{"executes", c_.executes},
          {"commits", c_.commits},
          {"applied", c_.applied},
          {"reads", c_.reads},
          {"replies", c_.replies},
          {"forwards_out", c_.forwards_out},
          {"forwards_in", c_.forwards_in},
          {"acks_out", c_.acks_out},
          {"acks_in", c_.acks_in},
          {"duplicates", c_.duplicates},
          {"early", c_.early},
          {"backfilled_out", c_.backfilled_out},
          {"backfilled_in", c_.backfilled_in},
          {"replayed", c_.replayed},
          {"lock_waits", c_.lock_waits},
          {"rerouted", c_.rerouted},
          {"members_skipped", c_.members_skipped},
          {"malformed", {{"bad_count", c_.bad_count}, {"bad_length", c_.bad_length}, {"trailing", c_.trailing},
                         {"bad_header", c_.bad_header}, {"out_of_range", c_.out_of_range}}},
          {"refused", c_.refused},
          {"not_head", c_.not_head},
          {"unknown_chain", c_.unknown_chain},
          {"configures", c_.configures},
          {"errors", c_.errors},
          {"log", {{"path", options_.log_path}, {"appends", lc.appends}, {"bytes", lc.bytes}, {"syncs", lc.syncs},
                   {"sync_us", lc.sync_ns / 1000}, {"fdatasync", options_.sync},
                   {"error", log_error_}}},
          {"chains", chains}};
}

}  // namespace

memnode::MemNodeExtensionFactory TxExtension(const TxReplicaOptions& options) {
  return [options](const memnode::ExtensionContext& ctx) -> std::unique_ptr<memnode::MemNodeExtension> {
    return std::make_unique<TxReplica>(ctx, options);
  };
}

}  // namespace pulse::tx
