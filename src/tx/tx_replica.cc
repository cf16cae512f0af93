// The replica of chain-replicated transactions (tx_replica.h).
#include "tx/tx_replica.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "node/node_tenant.h"
#include "tx/replica_rings.h"
#include "tx/tx_log.h"
#include "tx/tx_stages.h"
#include "tx/tx_wire.h"
#include "common/elapsed.h"

namespace pulse::tx {
namespace {

constexpr uint64_t kLockBlock = 64;  // a key: one 64-byte block of the region

using SteadyClock = std::chrono::steady_clock;

// Where a transaction's time goes here (stats "stages"; docs/tx.md).
struct Stages {
  StageHistogram queue;       // a request's arrival -> its handling in the node's loop pass
  StageHistogram locks;       // head: arrival -> first in every key's queue (read, logged)
  StageHistogram sync;        // one group-commit fdatasync
  StageHistogram downstream;  // forward sent (after this node's sync) -> its acknowledgement back
  StageHistogram head;        // head: a writing transaction's arrival -> its answer queued
};

// A log record's payload: u64 chain, u32 tenant, u64 seq, u64 region, u64
// the client's request id, u64 the chain's stable point when it was logged,
// then the result (AppendValues) and the record `[n][(offset, len, data) x n]`.
constexpr size_t kRecordHeader = 8 + 4 + 8 + 8 + 8 + 8;
struct RecordHead {
  uint64_t chain = 0;
  TenantId tenant = 0;
  uint64_t seq = 0, region = 0, request_id = 0, stable = 0;
};
std::optional<RecordHead> ParseRecordHead(std::span<const uint8_t> p) {
  if (p.size() < kRecordHeader) return std::nullopt;
  RecordHead h;
  std::memcpy(&h.chain, p.data(), 8);
  std::memcpy(&h.tenant, p.data() + 8, 4);
  std::memcpy(&h.seq, p.data() + 12, 8);
  std::memcpy(&h.region, p.data() + 20, 8);
  std::memcpy(&h.request_id, p.data() + 28, 8);
  std::memcpy(&h.stable, p.data() + 36, 8);
  return h;
}

// Request ids are MakeRequestId(cpu node, counter): a client's counter grows.
uint64_t ClientOf(uint64_t request_id) { return request_id >> 40; }
uint64_t CounterOf(uint64_t request_id) { return request_id & ((uint64_t{1} << 40) - 1); }

// The 64-byte blocks [offset, offset + length) touches.
void AddKeys(uint64_t offset, uint64_t length, std::set<uint64_t>* keys) {
  for (uint64_t k = offset / kLockBlock; k <= (offset + length - 1) / kLockBlock; ++k) keys->insert(k);
}

struct Counters {
  uint64_t executes = 0, commits = 0, applied = 0, reads = 0;
  uint64_t forwards_out = 0, forwards_in = 0, acks_out = 0, acks_in = 0, replies = 0;
  uint64_t forwards_by_ring = 0, acks_by_ring = 0;  // of forwards_out and acks_out
  uint64_t duplicates = 0, early = 0, backfilled_out = 0, backfilled_in = 0, replayed = 0;
  uint64_t lock_waits = 0, rerouted = 0, members_skipped = 0;
  uint64_t takeovers = 0, retries = 0, retries_answered = 0, retries_waiting = 0, outcome_unknown = 0;
  uint64_t replay_dropped = 0;  // logged records after the last certain point, cut at replay
  uint64_t bad_count = 0, bad_length = 0, trailing = 0, bad_header = 0, out_of_range = 0;
  uint64_t refused = 0, not_head = 0, unknown_chain = 0, configures = 0, errors = 0;
  uint64_t answers_unsent = 0;  // answers to clients whose send failed (the connection is gone)
};

struct Pending {  // logged here, forwarded, waiting for the successor's ack
  std::vector<WriteOp> writes;
  net::EndpointId upstream = net::kInvalidEndpoint;  // predecessor, or the client at the head
  bool client = false;                               // upstream is the client (this is the head)
  uint64_t request_id = 0;                           // the client's id of the transaction
  Values values;                                     // the reads' values (the client's answer)
  std::vector<uint64_t> keys;                        // locks held (head)
  uint32_t sent_to = UINT32_MAX;                     // the member it was forwarded to
  SteadyClock::time_point arrived{};                 // head: when the client's request arrived
  SteadyClock::time_point sent_at{};                 // when the forward left (after the pass's sync)
  // Clients' retries that reached this member while it waited: answered
  // when it commits.
  std::vector<std::pair<net::EndpointId, uint64_t>> waiters;
};

struct Logged {  // a logged record, kept for backfilling a rejoining member
  uint64_t request_id = 0;
  Values values;
  std::vector<WriteOp> writes;
};

uint64_t LoggedBytes(const Logged& l) {
  uint64_t n = 0;
  for (const auto& v : l.values) n += v.size();
  for (const WriteOp& w : l.writes) n += w.data.size();
  return n;
}

struct Committed {  // a committed transaction's result (the retry window)
  uint64_t seq = 0;
  Values values;
  uint64_t bytes = 0;
};

struct Waiting {  // head: a transaction queued behind its locks
  net::EndpointId from = net::kInvalidEndpoint;
  SteadyClock::time_point arrived{};
  uint64_t request_id = 0;
  ExecuteBody body;
  std::vector<uint64_t> keys;
  uint32_t blocked = 0;
};

struct Early {  // a forward ahead of the next sequence number
  net::EndpointId from = net::kInvalidEndpoint;
  bool backfill = false;
  uint64_t request_id = 0;
  Values values;
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
  uint64_t first_logged = 0;  // the first sequence number replayed from the log (0: none)
  // Every seq <= stable is committed on every member: at the head its
  // acknowledged prefix, elsewhere what the head's forwards said.
  uint64_t stable = 0;
  std::map<uint64_t, Logged> history;  // seq -> record
  uint64_t history_bytes = 0;          // the values and writes it holds
  std::map<uint64_t, Pending> pending;
  std::map<uint64_t, uint64_t> pending_ids;  // client request id -> pending seq
  // The retry window: committed client request ids and their results, the
  // oldest first in committed_order; per client (cpu node), the highest
  // counter dropped from the window.  window_partial: the log this replica
  // replayed had been truncated, so ids committed before it are unknown.
  std::unordered_map<uint64_t, Committed> committed;
  std::deque<uint64_t> committed_order;
  uint64_t committed_bytes = 0;
  std::map<uint64_t, uint64_t> evicted_max;
  bool window_partial = false;
  std::map<uint64_t, Early> early;
  // head
  std::map<uint64_t, std::deque<uint64_t>> locks;  // key -> waiting ids, the holder first
  std::map<uint64_t, Waiting> waiting;
  uint64_t next_wait = 1;
  std::deque<uint64_t> ready;
  std::set<uint64_t> waiting_ids;  // client request ids queued behind their locks
};

class TxReplica final : public memnode::MemNodeExtension {
 public:
  TxReplica(const memnode::ExtensionContext& ctx, TxReplicaOptions options)
      : ctx_(ctx),
        options_(std::move(options)),
        rings_(ctx.worker, ReplicaRingsOptions{}, [this](net::EndpointId ep, std::vector<uint8_t> bytes) {
          (void)ctx_.worker->Send(ep, kAmTxRequest, std::move(bytes));
        }) {}
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
    inputs_.push_back(Input{from, *h, std::vector<uint8_t>(body.begin(), body.end()), who, SteadyClock::now()});
    return std::nullopt;
  }

  bool Poll() override;
  void OnDisconnect(net::EndpointId ep) override {
    // Also a connection a neighbour opened (acknowledgements go back on it).
    rings_.Close(ep);
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
    SteadyClock::time_point arrived;
  };
  struct Out {
    net::EndpointId ep;
    uint16_t am;
    std::vector<uint8_t> bytes;
    bool ack = false;  // an acknowledgement (counted apart when it goes by ring)
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
  // Logs transaction `seq` of chain `id` (durable at the pass's sync).
  Status Log(uint64_t id, Chain& c, uint64_t seq, uint64_t request_id, const Values& values,
             const std::vector<WriteOp>& writes) {
    std::vector<uint8_t> rec(kRecordHeader);
    std::memcpy(rec.data(), &id, 8);
    std::memcpy(rec.data() + 8, &c.tenant, 4);
    std::memcpy(rec.data() + 12, &seq, 8);
    std::memcpy(rec.data() + 20, &c.region, 8);
    std::memcpy(rec.data() + 28, &request_id, 8);
    std::memcpy(rec.data() + 36, &c.stable, 8);
    AppendValues(values, &rec);
    AppendRecord(writes, &rec);
    if (log_ == nullptr) return Status::FailedPrecondition("tx: the log is not open");
    PULSE_RETURN_IF_ERROR(log_->Append(rec));
    Keep(c, seq, Logged{request_id, values, writes});
    return Status::Ok();
  }
  void Keep(Chain& c, uint64_t seq, Logged logged) {
    c.last_logged = seq;
    const uint64_t bytes = LoggedBytes(logged);
    if (auto old = c.history.find(seq); old != c.history.end()) c.history_bytes -= LoggedBytes(old->second);
    c.history[seq] = std::move(logged);
    c.history_bytes += bytes;
    // The last history_records, within history_bytes; the newest is kept.
    while (c.history.size() > 1 &&
           (c.history.size() > options_.history_records || c.history_bytes > options_.history_bytes)) {
      c.history_bytes -= LoggedBytes(c.history.begin()->second);
      c.history.erase(c.history.begin());
    }
  }
  // The result of `request_id` if it committed here (and is in the window).
  const Committed* FindCommitted(const Chain& c, uint64_t request_id) const {
    auto it = c.committed.find(request_id);
    return it == c.committed.end() ? nullptr : &it->second;
  }
  // Whether `request_id` may have committed and left the window (or
  // committed before a truncated log this replica replayed).
  bool MayHaveForgotten(const Chain& c, uint64_t request_id) const {
    if (c.window_partial) return true;
    auto it = c.evicted_max.find(ClientOf(request_id));
    return it != c.evicted_max.end() && CounterOf(request_id) <= it->second;
  }
  void ReplyCommitted(net::EndpointId ep, uint64_t request_id, uint64_t seq, const Values& values) {
    Reply r{request_id, StatusCodeToWire(Status::Code::kOk), seq, values, {}};
    ++c_.replies;
    Send(ep, kAmTxReply, EncodeReply(r));
  }
  // Acknowledgements and answers: sent after the pass's sync.
  void Send(net::EndpointId ep, uint16_t am, std::vector<uint8_t> bytes) {
    outputs_.push_back(Out{ep, am, std::move(bytes)});
  }
  // A kAmTxRequest to another replica: into its ring where there is one
  // (true), else as a message.
  bool SendToReplica(Out& o) {
    if (options_.rings_between_replicas) return rings_.Send(o.ep, std::move(o.bytes));
    (void)ctx_.worker->Send(o.ep, o.am, std::move(o.bytes));
    return false;
  }
  // Forwards: sent before the pass's sync, so that the members' syncs of
  // one record overlap instead of following each other; no member
  // acknowledges a record before its own sync, so an answer still means
  // durable on every member.
  void SendForward(net::EndpointId ep, std::vector<uint8_t> bytes) {
    forwards_.push_back(Out{ep, kAmTxRequest, std::move(bytes)});
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
    outputs_.back().ack = true;
  }
  // Sends pending `seq` to the next live member, or commits it here if
  // there is none (this node is the tail).
  void ForwardOrCommit(uint64_t id, Chain& c, uint64_t seq);
  void Commit(uint64_t id, Chain& c, uint64_t seq);
  void Finish(uint64_t id, Chain& c, uint64_t seq, Pending p);
  void ProcessForward(uint64_t id, Chain& c, uint64_t seq, Early e);
  void StartReady(uint64_t id, Chain& c);
  void Release(Chain& c, const std::vector<uint64_t>& keys);
  void Remember(Chain& c, uint64_t request_id, uint64_t seq, const Values& values);
  // A retry reached a member that is not the head: if every member before
  // it is dead (the switch lists it dead, or it cannot be reached), it
  // takes over.  Unavailable if one before it is alive.
  Status TakeOverIfHeadless(Chain& c);
  void BecomeHead(Chain& c);
  void CompactLog();

  memnode::ExtensionContext ctx_;
  TxReplicaOptions options_;
  std::unique_ptr<TxLog> log_;
  bool opened_ = false;
  bool reroute_ = false;
  uint64_t next_compact_ = 0;  // the log size that triggers the next compaction
  std::deque<Input> inputs_;
  std::vector<Out> outputs_;
  std::vector<Out> forwards_;
  ReplicaRings rings_;  // forwards by ring where there is one (options_.rings_between_replicas)
  std::map<uint64_t, Chain> chains_;
  std::map<uint32_t, net::EndpointId> peer_ep_;
  std::map<net::EndpointId, uint32_t> peer_node_;
  Counters c_;
  Stages stages_;
  std::vector<std::pair<uint64_t, uint64_t>> forwarded_this_pass_;  // (chain, seq): stamped sent after the sync
  std::string log_error_;
};

void TxReplica::OpenLog() {
  opened_ = true;
  if (options_.log_path.empty()) {
    log_error_ = "no log path";
    return;
  }
  const bool keep = ctx_.pool_reattached && ctx_.pool_reattached();
  // Replay.  Only what every member had committed (the highest stable point
  // the log records) is certain: records after it may never have committed
  // (logged by a head that died before forwarding them); they are cut from
  // the log, and rejoining, this member reports that point and is
  // backfilled with what committed after it (docs/tx.md "Failures").
  // Nothing is applied: the re-attached pool holds everything this member
  // applied before it died, which includes every record up to that point
  // (a member applies a record before it acknowledges it, and the point
  // moves only when acknowledgements reach the head); applying them again
  // would put back older values of keys that later records overwrote.
  struct Replayed {
    RecordHead head;
    Logged logged;
  };
  std::map<uint64_t, std::vector<Replayed>> replayed;  // chain -> its records in log order
  std::map<uint64_t, uint64_t> certain;                // chain -> the highest stable point logged
  Result<std::unique_ptr<TxLog>> log = TxLog::Open(options_.log_path, keep, [&](std::span<const uint8_t> p) {
    std::optional<RecordHead> h = ParseRecordHead(p);
    if (!h) return;
    size_t values_used = 0, used = 0;
    Result<Values> values = DecodeValues(p.subspan(kRecordHeader), &values_used);
    if (!values.ok()) return;
    Malformed m{};
    Result<std::vector<WriteOp>> w = DecodeRecord(p.subspan(kRecordHeader + values_used), &used, &m);
    if (!w.ok()) return;
    uint64_t& point = certain[h->chain];
    point = std::max(point, h->stable);
    replayed[h->chain].push_back(Replayed{*h, Logged{h->request_id, std::move(values).value(), std::move(w).value()}});
  });
  if (!log.ok()) {
    log_error_ = log.status().ToString();
    return;
  }
  log_ = std::move(log).value();
  bool uncertain = false;
  for (auto& [id, records] : replayed) {
    Chain& c = chains_[id];
    for (Replayed& r : records) {
      c.tenant = r.head.tenant;
      c.region = r.head.region;
      if (r.head.seq <= c.last_logged) continue;
      if (r.head.seq > certain[id]) {
        uncertain = true;
        ++c_.replay_dropped;
        continue;
      }
      if (c.first_logged == 0) {
        c.first_logged = r.head.seq;
        c.window_partial = r.head.seq > 1;  // a truncated log: what came before is not known here
      }
      ++c_.replayed;
      Remember(c, r.logged.request_id, r.head.seq, r.logged.values);
      Keep(c, r.head.seq, std::move(r.logged));
    }
    c.stable = c.last_logged;
  }
  if (uncertain) {
    Status s = log_->Compact([&certain](std::span<const uint8_t> p) {
      std::optional<RecordHead> h = ParseRecordHead(p);
      return h && h->seq <= certain[h->chain];
    });
    if (!s.ok()) log_error_ = s.ToString();
  }
  next_compact_ = std::max<uint64_t>(options_.compact_bytes, log_->size() + options_.compact_bytes);
}

bool TxReplica::Poll() {
  if (!opened_) OpenLog();
  rings_.Poll();  // credits back; a successor asleep with our forwards in its ring is woken
  if (inputs_.empty() && !reroute_ && outputs_.empty() && forwards_.empty()) return false;
  while (!inputs_.empty()) {
    Input in = std::move(inputs_.front());
    inputs_.pop_front();
    stages_.queue.Add(MicrosSince(in.arrived));
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
  // The pass's forwards leave first: the successors log and sync them
  // while this member syncs.
  const SteadyClock::time_point now = SteadyClock::now();
  for (Out& o : forwards_)
    if (SendToReplica(o)) ++c_.forwards_by_ring;
  forwards_.clear();
  // A successor that went to sleep before our entries landed is woken now,
  // not at our next pass (nothing to do where no ring is open).
  rings_.Poll();
  for (const auto& [id, seq] : forwarded_this_pass_) {
    auto c = chains_.find(id);
    if (c == chains_.end()) continue;
    if (auto p = c->second.pending.find(seq); p != c->second.pending.end()) p->second.sent_at = now;
  }
  forwarded_this_pass_.clear();
  // Group commit: what this pass logged is durable before any
  // acknowledgement or answer leaves.
  if (log_ != nullptr && log_->dirty() && options_.sync) {
    const SteadyClock::time_point t = SteadyClock::now();
    Status s = log_->Sync();
    if (!s.ok()) log_error_ = s.ToString();
    stages_.sync.Add(MicrosSince(t));
  }
  if (log_ != nullptr && options_.compact_bytes != 0 && log_->size() >= next_compact_) CompactLog();
  // Acknowledgements and backfills to other replicas by ring, answers to
  // clients (who have no ring server) as messages.
  for (Out& o : outputs_) {
    if (o.am != kAmTxRequest) {
      if (!ctx_.worker->Send(o.ep, o.am, std::move(o.bytes)).ok()) ++c_.answers_unsent;
    } else if (SendToReplica(o) && o.ack) {
      ++c_.acks_by_ring;
    }
  }
  outputs_.clear();
  rings_.Poll();
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
  const bool retry = (h.flags & kFlagRetry) != 0;
  if (retry) ++c_.retries;
  // A transaction committed here (through this member as head, or through
  // a head that died since): its original result, whatever this member's
  // place in the chain.
  if (const Committed* done = FindCommitted(c, h.request_id)) {
    ++c_.retries_answered;
    return ReplyCommitted(in.from, h.request_id, done->seq, done->values);
  }
  // Logged here and on its way: answered when it commits.
  if (auto p = c.pending_ids.find(h.request_id); p != c.pending_ids.end()) {
    Pending& pending = c.pending.at(p->second);
    if (!(pending.client && pending.upstream == in.from)) pending.waiters.emplace_back(in.from, h.request_id);
    ++c_.retries_waiting;
    return;
  }
  if (c.waiting_ids.count(h.request_id) != 0) {
    ++c_.duplicates;  // queued behind its locks: answered when it runs
    return;
  }
  if (!IsHead(c)) {
    Status s = TakeOverIfHeadless(c);
    if (!s.ok()) {
      ++c_.not_head;
      return ReplyTo(in.from, h.request_id, s);
    }
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
  // A retried writing transaction that is neither committed nor logged
  // here: it never got past the (dead) head, unless it committed so long
  // ago that the window forgot it.
  if (retry && !body->writes.empty() && MayHaveForgotten(c, h.request_id)) {
    ++c_.outcome_unknown;
    return ReplyTo(in.from, h.request_id,
                   Status::OutcomeUnknown(fmt::format(
                       "tx: request {:#x} is older than node {}'s window of committed transactions", h.request_id,
                       ctx_.node)));
  }
  Waiting w;
  w.from = in.from;
  w.arrived = in.arrived;
  w.request_id = h.request_id;
  if ((h.flags & kFlagNoLock) == 0) {
    std::set<uint64_t> keys;
    for (const ReadOp& r : body->reads) AddKeys(r.offset, r.length, &keys);
    for (const WriteOp& wr : body->writes) AddKeys(wr.offset, wr.data.size(), &keys);
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
  c.waiting_ids.insert(h.request_id);
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
    c.waiting_ids.erase(w.request_id);
    stages_.locks.Add(MicrosSince(w.arrived));
    Pending p;
    p.upstream = w.from;
    p.arrived = w.arrived;
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
    s = Log(id, c, seq, p.request_id, p.values, w.body.writes);
    if (!s.ok()) {
      Release(c, p.keys);
      ReplyTo(p.upstream, p.request_id, s);
      continue;
    }
    c.pending_ids[p.request_id] = seq;
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
    if (IsHead(c)) c.stable = c.pending.begin()->first - 1;  // the acknowledged prefix
    forwarded_this_pass_.emplace_back(id, seq);
    SendForward(*ep, EncodeForward(h, ForwardBody{seq, p.request_id, c.stable, p.values, p.writes}));
    return;
  }
  Commit(id, c, seq);  // no live member after this one: this is the tail
}

void TxReplica::Commit(uint64_t id, Chain& c, uint64_t seq) {
  auto node = c.pending.extract(seq);
  ++c_.commits;
  Finish(id, c, seq, std::move(node.mapped()));
}

// Applies `seq` here, remembers its result and passes the acknowledgement
// up (or, at the head, answers the client and releases its locks).
void TxReplica::Finish(uint64_t id, Chain& c, uint64_t seq, Pending p) {
  Status s = Apply(c, p.writes);
  if (!s.ok()) log_error_ = s.ToString();
  c.pending_ids.erase(p.request_id);
  Remember(c, p.request_id, seq, p.values);
  Release(c, p.keys);
  if (IsHead(c)) c.stable = c.pending.empty() ? c.last_logged : c.pending.begin()->first - 1;
  for (const auto& [ep, request_id] : p.waiters) ReplyCommitted(ep, request_id, seq, p.values);
  if (p.sent_at != SteadyClock::time_point{}) stages_.downstream.Add(MicrosSince(p.sent_at));
  if (p.client) {
    stages_.head.Add(MicrosSince(p.arrived));
    return ReplyCommitted(p.upstream, p.request_id, seq, p.values);
  }
  if (p.upstream != net::kInvalidEndpoint) SendAck(id, c, p.upstream, seq);
}

void TxReplica::Remember(Chain& c, uint64_t request_id, uint64_t seq, const Values& values) {
  Committed done{seq, values, 0};
  for (const auto& v : values) done.bytes += v.size();
  c.committed_bytes += done.bytes;
  if (auto old = c.committed.find(request_id); old != c.committed.end()) {
    c.committed_bytes -= old->second.bytes;
    old->second = std::move(done);
  } else {
    c.committed.emplace(request_id, std::move(done));
    c.committed_order.push_back(request_id);
  }
  // The window: the last committed_ids results, within committed_bytes;
  // the newest is always kept.
  while (c.committed_order.size() > 1 &&
         (c.committed_order.size() > options_.committed_ids || c.committed_bytes > options_.committed_bytes)) {
    const uint64_t old = c.committed_order.front();
    c.committed_order.pop_front();
    auto gone = c.committed.find(old);
    if (gone == c.committed.end()) continue;
    c.committed_bytes -= gone->second.bytes;
    c.committed.erase(gone);
    uint64_t& high = c.evicted_max[ClientOf(old)];
    high = std::max(high, CounterOf(old));
  }
}

Status TxReplica::TakeOverIfHeadless(Chain& c) {
  for (const Member& m : c.members) {
    if (m.node == ctx_.node) break;
    if (c.dead.count(m.node) != 0) continue;
    if (ctx_.peer(m.node).ok())
      return Status::Unavailable(fmt::format("tx: node {} is not the head: node {} before it is alive", ctx_.node,
                                             m.node));
    MarkDead(c, m.node);
  }
  ++c_.takeovers;
  BecomeHead(c);
  return Status::Ok();
}

// What the old head forwarded here and is not yet acknowledged stays on its
// way down the chain; its acknowledgement ends here (the predecessor is
// gone) and answers the clients' retries.  Its writes hold their keys'
// locks, so that no new transaction reads the values they replace.
// Forwards that were waiting for a gap the old head can no longer fill are
// dropped (they were never acknowledged).
void TxReplica::BecomeHead(Chain& c) {
  c.early.clear();
  for (auto& [seq, p] : c.pending) {
    p.upstream = net::kInvalidEndpoint;
    std::set<uint64_t> keys;
    for (const WriteOp& w : p.writes) AddKeys(w.offset, w.data.size(), &keys);
    for (uint64_t k : keys) c.locks[k].push_back(c.next_wait++);
    p.keys.assign(keys.begin(), keys.end());
  }
  c.stable = c.pending.empty() ? c.last_logged : c.pending.begin()->first - 1;
}

// Drops what no one needs any more: a chain's records up to the point
// every member has committed (stable), except its last history_records
// (a rejoining member is backfilled from them, and a restarted member
// rebuilds its retry window from them).
void TxReplica::CompactLog() {
  std::map<uint64_t, uint64_t> cut;  // chain -> drop seqs <= this
  for (const auto& [id, c] : chains_) {
    const uint64_t keep_from =
        c.last_logged > options_.history_records ? c.last_logged - options_.history_records : 0;
    cut[id] = std::min(c.stable, keep_from);
  }
  Status s = log_->Compact([&cut](std::span<const uint8_t> p) {
    std::optional<RecordHead> h = ParseRecordHead(p);
    if (!h) return false;
    auto it = cut.find(h->chain);
    return it == cut.end() || h->seq > it->second;
  });
  if (!s.ok()) log_error_ = s.ToString();
  // Next when it has grown by compact_bytes again (what is kept may be large).
  next_compact_ = log_->size() + options_.compact_bytes;
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
  c.stable = std::max(c.stable, std::min(f->stable, c.last_logged));
  Early e{in.from, backfill, f->request_id, std::move(f->values), std::move(f->writes)};
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
  Status s = Log(id, c, seq, e.request_id, e.values, e.writes);
  if (!s.ok()) {
    log_error_ = s.ToString();
    return;
  }
  if (e.backfill) {
    (void)Apply(c, e.writes);
    Remember(c, e.request_id, seq, e.values);
    return;
  }
  Pending p;
  p.writes = std::move(e.writes);
  p.upstream = e.from;
  p.request_id = e.request_id;
  p.values = std::move(e.values);
  c.pending_ids[p.request_id] = seq;
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
  if (b->members.size() > options_.max_members) {
    ++c_.refused;
    return ReplyTo(in.from, h.request_id,
                   Status::FailedPrecondition(fmt::format(
                       "tx: configure: {} members, this cluster's chains have at most {} (tx.chain_length)",
                       b->members.size(), options_.max_members)));
  }
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
  const bool was_head = c.configured && IsHead(c);
  const bool was_configured = c.configured;
  c.tenant = h.tenant;
  c.region = mine->region;
  c.region_bytes = b->region_bytes;
  c.epoch = b->epoch;
  c.members = b->members;
  c.dead.clear();
  c.configured = true;
  if (was_configured && !was_head && IsHead(c)) {
    ++c_.takeovers;  // the configuration dropped the head before this member
    BecomeHead(c);
  }
  if (feed) {
    Result<net::EndpointId> ep = PeerEp(b->joiner);
    if (!ep.ok()) return ReplyTo(in.from, h.request_id, ep.status());
    for (auto r = c.history.upper_bound(b->joiner_seq); r != c.history.end(); ++r) {
      Header fh{Kind::kForward, kFlagBackfill, c.tenant, 0, h.chain};
      ++c_.backfilled_out;
      Send(*ep, kAmTxRequest,
           EncodeForward(fh, ForwardBody{r->first, r->second.request_id, c.stable, r->second.values,
                                         r->second.writes}));
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
                      {"stable", c.stable},
                      {"committed_window", c.committed.size()},
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
          {"replay_dropped", c_.replay_dropped},
          {"lock_waits", c_.lock_waits},
          {"takeovers", c_.takeovers},
          {"retries", c_.retries},
          {"retries_answered", c_.retries_answered},
          {"retries_waiting", c_.retries_waiting},
          {"outcome_unknown", c_.outcome_unknown},
          {"rerouted", c_.rerouted},
          {"members_skipped", c_.members_skipped},
          {"forwards_by_ring", c_.forwards_by_ring},
          {"acks_by_ring", c_.acks_by_ring},
          {"replica_rings", rings_.Stats()},
          {"rings_between_replicas", options_.rings_between_replicas},
          {"malformed", {{"bad_count", c_.bad_count}, {"bad_length", c_.bad_length}, {"trailing", c_.trailing},
                         {"bad_header", c_.bad_header}, {"out_of_range", c_.out_of_range}}},
          {"refused", c_.refused},
          {"not_head", c_.not_head},
          {"answers_unsent", c_.answers_unsent},
          {"unknown_chain", c_.unknown_chain},
          {"configures", c_.configures},
          {"errors", c_.errors},
          {"log", {{"path", options_.log_path}, {"appends", lc.appends}, {"bytes", lc.bytes}, {"syncs", lc.syncs},
                   {"sync_us", lc.sync_ns / 1000}, {"fdatasync", options_.sync}, {"size", log_ ? log_->size() : 0},
                   {"compactions", lc.compactions}, {"dropped", lc.dropped},
                   {"compact_bytes", options_.compact_bytes}, {"keep_records", options_.history_records},
                   {"error", log_error_}}},
          {"max_chain", options_.max_members},
          {"stages", {{"queue", stages_.queue.ToJson()}, {"locks", stages_.locks.ToJson()},
                      {"sync", stages_.sync.ToJson()}, {"downstream", stages_.downstream.ToJson()},
                      {"head", stages_.head.ToJson()}}},
          {"chains", chains}};
}

}  // namespace

Result<TxReplicaOptions> TxReplicaOptionsFromEnv(const std::string& log_path) {
  TxReplicaOptions o;
  o.log_path = log_path;
  // A variable that names one of two choices: `*out` is whether it names `yes`.
  auto choice = [](const char* name, const char* yes, const char* no, bool* out) -> Status {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return Status::Ok();
    const std::string v = text;
    if (v != yes && v != no) return Status::InvalidArgument(fmt::format("{}: '{}' is not {} or {}", name, v, yes, no));
    *out = v == yes;
    return Status::Ok();
  };
  PULSE_RETURN_IF_ERROR(choice("PULSE_TX_LOG_SYNC", "fdatasync", "none", &o.sync));
  PULSE_RETURN_IF_ERROR(choice("PULSE_TX_REPLICA_PATH", "auto", "am", &o.rings_between_replicas));
  auto number = [](const char* name, uint64_t* out) -> Status {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return Status::Ok();
    uint64_t v = 0;
    const char* end = text + std::strlen(text);
    auto [at, ec] = std::from_chars(text, end, v);
    if (ec != std::errc() || at != end)
      return Status::InvalidArgument(fmt::format("{}: '{}' is not a non-negative integer", name, text));
    *out = v;
    return Status::Ok();
  };
  PULSE_RETURN_IF_ERROR(number("PULSE_TX_LOG_COMPACT_BYTES", &o.compact_bytes));
  uint64_t max_members = o.max_members;
  PULSE_RETURN_IF_ERROR(number("PULSE_TX_MAX_CHAIN", &max_members));
  if (max_members == 0 || max_members > kMaxMembers)
    return Status::InvalidArgument(fmt::format("PULSE_TX_MAX_CHAIN: {} is not in [1, {}]", max_members, kMaxMembers));
  o.max_members = static_cast<uint32_t>(max_members);
  uint64_t window = o.committed_ids;
  PULSE_RETURN_IF_ERROR(number("PULSE_TX_COMMITTED_IDS", &window));
  if (window == 0) return Status::InvalidArgument("PULSE_TX_COMMITTED_IDS: must be at least 1");
  o.committed_ids = static_cast<size_t>(window);
  uint64_t keep = o.history_records;
  PULSE_RETURN_IF_ERROR(number("PULSE_TX_LOG_KEEP_RECORDS", &keep));
  if (keep == 0) return Status::InvalidArgument("PULSE_TX_LOG_KEEP_RECORDS: must be at least 1");
  o.history_records = static_cast<size_t>(keep);
  return o;
}

memnode::MemNodeExtensionFactory TxExtension(const TxReplicaOptions& options) {
  return [options](const memnode::ExtensionContext& ctx) -> std::unique_ptr<memnode::MemNodeExtension> {
    return std::make_unique<TxReplica>(ctx, options);
  };
}

}  // namespace pulse::tx
