// The memory node's side of the ring request path (ring_host.h).
#include "net/ring_host.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>


namespace pulse::net::ring {

struct RingHost::Ring {
  uint32_t index = 0;
  EndpointId ep = kInvalidEndpoint;
  Geometry geometry;
  // Both allocated by UCX (Worker::AllocateMemory): on one host peers map
  // them and write with plain stores (docs/ring.md, "Transports").  Each is
  // an allocation of its own, so each key reaches its own bytes only.
  MemoryRegion ring_region;      // the request ring
  MemoryRegion tail_region;      // its tail and the client's wait word (kTailBytes, on a page of its own)
  uint32_t* tail = nullptr;      // tail_region's bytes
  uint32_t* wait_word = nullptr;  // tail + 1
  uint32_t answered_wait = 0;     // the last wait epoch answered with kAmRingAnswered
  uint8_t* requests = nullptr;   // ring_region's bytes
  RemoteKey response_key;        // the client's status block and response ring
  uint64_t response_base = 0;
  // The client's status block and response ring mapped here (on one host,
  // RemoteKey::mapped), or nullptr: responses and doorbells are then plain
  // stores, the same one-sided writes as a put without a request, a
  // completion and a staging copy each (issue 15: the puts were a fifth of
  // the node's CPU per ring GET).
  uint8_t* response_memory = nullptr;
  std::vector<uint8_t> staging;  // responses as written, the source of their puts
  uint64_t head = 0;             // next seq to take
  std::vector<uint8_t> waiting;  // per slot: taken, not answered yet
  uint32_t responses = 0;        // written so far (wraps), for the doorbell
  bool doorbell_due = false;
  Clock::time_point torn_since{};  // when the entry at head was first seen torn
  bool torn = false;
  size_t puts_in_flight = 0;
  // Layout::kDoubleLayer: entries taken and not answered yet, by seq (their
  // descriptors say where the answer goes); entries whose descriptor was
  // taken while their bytes were still on the way, in descriptor order;
  // answers written so far (the response queue's numbering).
  std::unordered_map<uint64_t, Descriptor> answer_at;
  struct Pending {
    uint64_t seq = 0;
    Descriptor where;
    Clock::time_point since{};
  };
  std::vector<Pending> pending;
  uint64_t answered = 0;

  bool double_layer() const { return geometry.layout == Layout::kDoubleLayer; }
  uint8_t* data() const { return requests + geometry.data_offset(); }
};

namespace {

Clock::time_point Never() { return Clock::time_point::max(); }

}  // namespace

Result<std::unique_ptr<RingHost>> RingHost::Create(Worker* worker, const RingHostOptions& options,
                                                   Handler handler) {
  if (worker == nullptr) return Status::InvalidArgument("ring host: worker is null");
  if (options.max_rings == 0 || options.max_rings > (1u << 20)) {
    return Status::InvalidArgument("ring host: max_rings " + std::to_string(options.max_rings) +
                                   " not in [1, 2^20]");
  }
  if (options.max_batch == 0) return Status::InvalidArgument("ring host: max_batch is 0");
  std::unique_ptr<RingHost> host(new RingHost(worker, options, std::move(handler)));
  RingHost* self = host.get();
  worker->SetHandler(kAmRingOpen, [self](EndpointId from, std::span<const uint8_t> p) { self->OnOpen(from, p); });
  worker->SetHandler(kAmRingWake, [self](EndpointId from, std::span<const uint8_t> p) { self->OnWake(from, p); });
  return host;
}

RingHost::RingHost(Worker* worker, const RingHostOptions& options, Handler handler)
    : worker_(worker),
      options_(options),
      handler_(std::move(handler)),
      last_entry_(Clock::now()),
      window_us_(options.poll_window_us) {
  for (uint32_t i = options.max_rings; i > 0; --i) free_indices_.push_back(i - 1);
}

RingHost::~RingHost() {
  worker_->SetHandler(kAmRingOpen, {});
  worker_->SetHandler(kAmRingWake, {});
  for (auto& [index, ring] : rings_) {
    ring->ring_region = MemoryRegion();
    ring->tail_region = MemoryRegion();
    closing_.push_back(std::move(ring));
  }
  rings_.clear();
  found_ = nullptr;
  // Response puts read `staging`: let them finish before it goes.
  (void)worker_->RunUntil(
      [this] {
        Reap();
        return closing_.empty();
      },
      std::chrono::seconds(1));
  // Whatever is left completes with an error when the Worker goes; its
  // completion must not find freed memory, so it is left allocated.
  for (auto& ring : closing_) (void)ring.release();
}

std::optional<uint32_t> RingHost::RingOf(EndpointId ep) const {
  for (const auto& [index, ring] : rings_) {
    if (ring->ep == ep) return index;
  }
  return std::nullopt;
}

bool RingHost::AnswersOneSided(EndpointId ep) const {
  std::optional<uint32_t> index = RingOf(ep);
  return index.has_value() && rings_.at(*index)->response_key.uses_ucx_rma();
}

size_t RingHost::double_layer_rings() const {
  size_t n = 0;
  for (const auto& [index, ring] : rings_) n += ring->double_layer() ? 1 : 0;
  return n;
}

bool RingHost::DoubleLayer(EndpointId ep) const {
  std::optional<uint32_t> index = RingOf(ep);
  return index.has_value() && rings_.at(*index)->double_layer();
}

std::vector<EndpointId> RingHost::ring_endpoints() const {
  std::vector<EndpointId> out;
  for (const auto& [index, ring] : rings_) out.push_back(ring->ep);
  return out;
}

// ---- setup ----------------------------------------------------------------

void RingHost::OnOpen(EndpointId from, std::span<const uint8_t> payload) {
  Result<std::vector<uint8_t>> reply = Open(from, payload);
  if (!reply.ok()) {
    ++counters_.opens_refused;
    OpenReply refusal;
    refusal.code = StatusCodeToWire(reply.status().code());
    refusal.error = reply.status().message();
    reply = EncodeOpenReply(refusal);
  }
  // A failed send means the client is gone; its disconnect closes the ring.
  (void)worker_->Send(from, kAmRingOpenReply, std::move(reply).value());
}

Result<std::vector<uint8_t>> RingHost::Open(EndpointId from, std::span<const uint8_t> payload) {
  PULSE_ASSIGN_OR_RETURN(OpenRequest request, DecodeOpenRequest(payload));
  if (RingOf(from).has_value()) {
    return Status::AlreadyExists("connection " + std::to_string(from) + " already has a ring");
  }
  if (request.geometry.ring_bytes() > options_.max_ring_bytes) {
    return Status::InvalidArgument("ring of " + std::to_string(request.geometry.ring_bytes()) +
                                   " bytes exceeds max_ring_bytes " + std::to_string(options_.max_ring_bytes));
  }
  if (free_indices_.empty()) {
    return Status::ResourceExhausted("all " + std::to_string(options_.max_rings) + " rings are in use");
  }
  auto ring = std::make_unique<Ring>();
  ring->ep = from;
  ring->geometry = request.geometry;
  if (request.geometry.layout == Layout::kSlots) {
    ring->waiting.assign(request.geometry.slots, 0);
  } else {
    ring->answer_at.reserve(request.geometry.slots);
  }
  PULSE_ASSIGN_OR_RETURN(ring->response_key, worker_->ImportRkey(from, request.response_rkey));
  const uint64_t needed = kStatusBytes + request.geometry.ring_bytes();
  if (request.response_base != ring->response_key.base() || ring->response_key.size() < needed) {
    return Status::InvalidArgument("response_rkey does not cover the status block and a ring of " +
                                   std::to_string(request.geometry.ring_bytes()) + " bytes at response_base");
  }
  ring->response_base = request.response_base;
  ring->response_memory = ring->response_key.mapped();
  // Responses are staged for their puts only where they are puts.
  if (ring->response_memory == nullptr) ring->staging.assign(request.geometry.ring_bytes(), 0);
  ring->index = free_indices_.back();
  PULSE_ASSIGN_OR_RETURN(ring->ring_region, worker_->AllocateMemory(request.geometry.ring_bytes()));
  PULSE_ASSIGN_OR_RETURN(ring->tail_region, worker_->AllocateMemory(kTailBytes));
  ring->requests = static_cast<uint8_t*>(ring->ring_region.data());
  ring->tail = static_cast<uint32_t*>(ring->tail_region.data());
  ring->wait_word = ring->tail + 1;
  free_indices_.pop_back();

  OpenReply reply;
  reply.ring_id = ring->index;
  reply.ring_base = ring->ring_region.remote_address();
  reply.tail_address = ring->tail_region.remote_address();
  reply.ring_rkey.assign(ring->ring_region.rkey().begin(), ring->ring_region.rkey().end());
  reply.tail_rkey.assign(ring->tail_region.rkey().begin(), ring->tail_region.rkey().end());
  // A node asleep when the ring opens tells the client so at once.
  if (sleep_epoch_ != 0) (void)WriteStatus(*ring, sleep_epoch_);
  rings_.emplace(ring->index, std::move(ring));
  ++counters_.rings_opened;
  return EncodeOpenReply(reply);
}

RingHost::Ring* RingHost::Find(uint32_t index) {
  if (found_ != nullptr && found_->index == index) return found_;
  auto it = rings_.find(index);
  if (it == rings_.end()) return nullptr;
  return found_ = it->second.get();
}

void RingHost::Close(EndpointId ep) {
  std::optional<uint32_t> index = RingOf(ep);
  if (!index.has_value()) return;
  found_ = nullptr;
  auto it = rings_.find(*index);
  std::unique_ptr<Ring> ring = std::move(it->second);
  rings_.erase(it);
  // Unregistered (and freed) first: the index may go to a new client at once.
  ring->ring_region = MemoryRegion();
  ring->tail_region = MemoryRegion();
  ring->requests = nullptr;
  ring->tail = nullptr;
  ring->wait_word = nullptr;
  free_indices_.push_back(ring->index);
  ++counters_.rings_closed;
  closing_.push_back(std::move(ring));
  Reap();
}

void RingHost::Reap() {
  while (!closing_.empty() && closing_.front()->puts_in_flight == 0) closing_.pop_front();
}

// ---- serving --------------------------------------------------------------

size_t RingHost::Poll() {
  ++counters_.scans;
  const Clock::time_point now = Clock::now();
  size_t taken = 0;
  // The tails, ring by ring: a tail that differs from the
  // ring's head means entries to take.  Handlers may close rings (or open
  // none: opens come as messages), so the indices are collected first.
  // moved_'s capacity is reused; a Poll() re-entered from a handler
  // (OnWake inside the Worker's progress) finds it empty and uses its own.
  std::vector<uint32_t> moved = std::move(moved_);
  moved.clear();
  for (const auto& [index, ring] : rings_) {
    const uint32_t tail = std::atomic_ref<uint32_t>(*ring->tail).load(std::memory_order_acquire);
    if (tail != static_cast<uint32_t>(ring->head) || !ring->pending.empty()) moved.push_back(index);
  }
  for (uint32_t index : moved) {
    if (taken >= options_.max_batch) break;
    Ring* ring = Find(index);
    if (ring == nullptr) continue;
    taken += Serve(*ring, options_.max_batch - taken, now);
  }
  moved_ = std::move(moved);
  if (taken == 0) {
    ++counters_.empty_scans;
    polled_empty_ = true;
  }
  if (taken > 0) {
    // The gap since the previous entry was bridged by polling: a window of
    // twice that gap keeps catching such gaps without a sleep.
    if (sleep_epoch_ != 0) {
      // Found before any wake-up message (its put woke the Worker, or a
      // timed wait ended): the sleep ends here, and adapts the window as a
      // wake-up would.  The next doorbells say the node is awake.
      EndSleep(now);
    } else if (polled_empty_) {
      RaiseWindowFor(GapUs(now));
    }
    polled_empty_ = false;
    last_entry_ = now;
  }
  FlushDoorbells();
  Reap();
  return taken;
}

bool RingHost::WaitForTornHead(Ring& r, Clock::time_point now) {
  if (!r.torn) {
    r.torn = true;
    r.torn_since = now;
  }
  return now - r.torn_since < std::chrono::microseconds(options_.torn_timeout_us);
}

size_t RingHost::Serve(Ring& r, size_t budget, Clock::time_point now) {
  if (r.double_layer()) return ServeDoubleLayer(r, budget, now);
  size_t taken = 0;
  const EndpointId ep = r.ep;
  const uint32_t index = r.index;
  std::vector<uint8_t>& payload = entry_;
  while (taken < budget) {
    const uint32_t tail = std::atomic_ref<uint32_t>(*r.tail).load(std::memory_order_acquire);
    const uint32_t announced = tail - static_cast<uint32_t>(r.head);
    if (announced == 0 || announced > r.geometry.slots) break;  // nothing, or a tail that cannot be right
    const uint64_t seq = r.head;
    const size_t slot = seq % r.geometry.slots;
    if (r.waiting[slot] != 0) break;  // the client ran past its credits: wait for our own answer
    std::span<uint8_t> bytes(r.requests + r.geometry.slot_offset(seq), r.geometry.slot_bytes);
    uint32_t code = 0;
    EntryState state = CopyEntry(bytes, seq, &payload, &code);
    if (state == EntryState::kAbsent) break;  // the tail came first: the entry follows
    if (state == EntryState::kTorn) {
      if (WaitForTornHead(r, now)) break;
      state = EntryState::kMalformed;
    }
    r.torn = false;
    ClearEntry(bytes);
    ++r.head;
    ++taken;
    r.waiting[slot] = 1;
    if (state == EntryState::kMalformed || code != 0) {
      ++counters_.malformed;
      (void)Respond(index, seq,
                    Status::InvalidArgument("ring " + std::to_string(index) + " entry " + std::to_string(seq) +
                                            (code != 0 ? " has a nonzero code" : " is malformed or torn")),
                    {});
      continue;
    }
    ++counters_.entries;
    handler_(Request{index, ep, seq, payload});
    // The handler may have closed this ring (Close(ep)): stop if so.
    if (Find(index) != &r) break;
  }
  return taken;
}

namespace {

// Whether `d` names `bytes` of the data area that lie inside it.
bool InDataArea(uint32_t offset, uint32_t bytes, const Geometry& g) {
  return bytes >= kHeaderBytes + kTrailerBytes && bytes <= g.data_bytes && offset <= g.data_bytes - bytes;
}

}  // namespace

RingHost::EntryOutcome RingHost::TakeEntry(Ring& r, uint64_t seq, const Descriptor& where, Clock::time_point since,
                                           Clock::time_point now) {
  const uint32_t index = r.index;
  std::vector<uint8_t>& payload = entry_;
  std::span<uint8_t> bytes(r.data() + where.offset, where.bytes);
  uint32_t code = 0;
  EntryState state = CopyEntry(bytes, seq, &payload, &code);
  if (state == EntryState::kAbsent || state == EntryState::kTorn) {
    if (now - since < std::chrono::microseconds(options_.torn_timeout_us)) return EntryOutcome::kNotYet;
    state = EntryState::kMalformed;
  }
  if (state == EntryState::kComplete) ClearEntry(bytes);
  if (state == EntryState::kMalformed || code != 0) {
    ++counters_.malformed;
    (void)Respond(index, seq,
                  Status::InvalidArgument("ring " + std::to_string(index) + " entry " + std::to_string(seq) +
                                          (code != 0 ? " has a nonzero code" : " is malformed, torn or missing")),
                  {});
    return EntryOutcome::kAnswered;
  }
  ++counters_.entries;
  handler_(Request{index, r.ep, seq, payload});
  return EntryOutcome::kHandled;
}

size_t RingHost::ServeDoubleLayer(Ring& r, size_t budget, Clock::time_point now) {
  size_t taken = 0;
  const uint32_t index = r.index;
  // First the entries whose descriptors came before their bytes, each on
  // its own: one still on the way holds back no other.
  if (!r.pending.empty()) {
    std::vector<Ring::Pending> pending = std::move(r.pending);
    r.pending.clear();
    for (size_t i = 0; i < pending.size(); ++i) {
      const Ring::Pending& p = pending[i];
      if (taken >= budget) {
        r.pending.push_back(p);
        continue;
      }
      EntryOutcome outcome = TakeEntry(r, p.seq, p.where, p.since, now);
      if (outcome == EntryOutcome::kNotYet) {
        r.pending.push_back(p);
        continue;
      }
      ++taken;
      if (outcome == EntryOutcome::kHandled && Find(index) != &r) return taken;  // the handler closed the ring
    }
  }
  while (taken < budget) {
    const uint32_t tail = std::atomic_ref<uint32_t>(*r.tail).load(std::memory_order_acquire);
    const uint32_t announced = tail - static_cast<uint32_t>(r.head);
    if (announced == 0 || announced > r.geometry.slots) break;  // nothing, or a tail that cannot be right
    // The client ran past its credits: wait for our own answers.
    if (r.answer_at.size() >= r.geometry.slots) break;
    const uint64_t seq = r.head;
    std::span<uint8_t> slot(r.requests + r.geometry.slot_offset(seq), kDescriptorBytes);
    Descriptor where;
    EntryState state = CopyDescriptor(slot, seq, &where);
    if (state == EntryState::kAbsent) break;  // the tail came first: the descriptor follows
    if (state == EntryState::kTorn && WaitForTornHead(r, now)) break;
    r.torn = false;
    ClearDescriptor(slot);
    ++r.head;
    ++taken;
    // A descriptor that says nowhere to answer cannot be answered: it is
    // counted and dropped (the client's own timer re-sends by message).
    if (state != EntryState::kComplete || !InDataArea(where.answer_offset, where.answer_bytes, r.geometry)) {
      ++counters_.malformed;
      continue;
    }
    r.answer_at.emplace(seq, where);
    if (!InDataArea(where.offset, where.bytes, r.geometry)) {
      ++counters_.malformed;
      (void)Respond(index, seq,
                    Status::InvalidArgument("ring " + std::to_string(index) + " entry " + std::to_string(seq) +
                                            " names bytes outside the data area"),
                    {});
      continue;
    }
    EntryOutcome outcome = TakeEntry(r, seq, where, now, now);
    if (outcome == EntryOutcome::kNotYet) {
      r.pending.push_back(Ring::Pending{seq, where, now});
      continue;
    }
    if (outcome == EntryOutcome::kHandled && Find(index) != &r) break;  // the handler closed the ring
  }
  return taken;
}

Status RingHost::RespondDoubleLayer(Ring& r, uint64_t seq, const Status& status, std::span<const uint8_t> payload) {
  auto it = r.answer_at.find(seq);
  if (it == r.answer_at.end()) {
    return Status::FailedPrecondition("ring " + std::to_string(r.index) + " entry " + std::to_string(seq) +
                                      " is not waiting for an answer");
  }
  const Descriptor where = it->second;
  std::span<const uint8_t> body = status.ok() ? payload : std::span<const uint8_t>(
      reinterpret_cast<const uint8_t*>(status.message().data()),
      std::min(status.message().size(), where.answer_bytes - kHeaderBytes - kTrailerBytes));
  if (EntryBytes(body.size()) > where.answer_bytes) {
    return Status::InvalidArgument("ring " + std::to_string(r.index) + " answer of " + std::to_string(body.size()) +
                                   " bytes exceeds the " + std::to_string(where.answer_bytes) + " its entry reserved");
  }
  const uint64_t number = r.answered;
  const Descriptor answer{static_cast<uint32_t>(seq), static_cast<uint32_t>(seq >> 32), 0, 0};
  // Offsets in the ring's bytes, after the client's status block.
  const size_t answer_offset = r.geometry.data_offset() + where.answer_offset;
  const size_t descriptor_offset = r.geometry.slot_offset(number);
  const uint32_t code = StatusCodeToWire(status.code());
  // Straight into the client's memory where it is mapped here, else into
  // the staging copy (the same offsets) the puts read.
  const bool mapped = r.response_memory != nullptr;
  uint8_t* out = mapped ? r.response_memory + kStatusBytes : r.staging.data();
  PULSE_RETURN_IF_ERROR(EncodeEntry(std::span<uint8_t>(out + answer_offset, where.answer_bytes), seq, code, body));
  EncodeDescriptor(std::span<uint8_t>(out + descriptor_offset, kDescriptorBytes), number, answer);
  if (!mapped) {
    Ring* ring = &r;
    for (auto [offset, bytes] : {std::pair<size_t, size_t>{answer_offset, EntryBytes(body.size())},
                                 std::pair<size_t, size_t>{descriptor_offset, kDescriptorBytes}}) {
      ++ring->puts_in_flight;
      Status s = worker_->PutAsync(r.response_key, r.response_base + kStatusBytes + offset, out + offset, bytes,
                                   [ring](const Status&) { --ring->puts_in_flight; });
      if (!s.ok()) {
        --ring->puts_in_flight;
        return s;
      }
    }
  }
  r.answer_at.erase(it);
  ++r.answered;
  ++r.responses;
  r.doorbell_due = true;
  ++counters_.responses;
  return Status::Ok();
}

Status RingHost::Respond(uint32_t index, uint64_t seq, const Status& status,
                         std::span<const uint8_t> payload) {
  Ring* found = Find(index);
  if (found == nullptr) return Status::NotFound("ring " + std::to_string(index) + " is closed");
  Ring& r = *found;
  if (r.double_layer()) return RespondDoubleLayer(r, seq, status, payload);
  const size_t slot = seq % r.geometry.slots;
  if (seq >= r.head || r.head - seq > r.geometry.slots || r.waiting[slot] == 0) {
    return Status::FailedPrecondition("ring " + std::to_string(index) + " entry " + std::to_string(seq) +
                                      " is not waiting for an answer");
  }
  std::span<const uint8_t> body = status.ok() ? payload : std::span<const uint8_t>(
      reinterpret_cast<const uint8_t*>(status.message().data()),
      std::min(status.message().size(), r.geometry.max_payload()));
  const size_t offset = r.geometry.slot_offset(seq);
  // Straight into the client's slot where its ring is mapped here (the open
  // checked that the key covers the status block and the whole ring), else
  // into the staging copy its put reads.
  const bool mapped = r.response_memory != nullptr;
  std::span<uint8_t> out((mapped ? r.response_memory + kStatusBytes : r.staging.data()) + offset, r.geometry.slot_bytes);
  PULSE_RETURN_IF_ERROR(EncodeEntry(out, seq, StatusCodeToWire(status.code()), body));
  r.waiting[slot] = 0;
  if (!mapped) {
    const size_t used = kHeaderBytes + ((body.size() + 7) & ~size_t{7}) + kTrailerBytes;
    Ring* ring = &r;
    ++ring->puts_in_flight;
    Status s = worker_->PutAsync(r.response_key, r.response_base + kStatusBytes + offset, out.data(), used,
                                 [ring](const Status&) { --ring->puts_in_flight; });
    if (!s.ok()) {
      --ring->puts_in_flight;
      return s;
    }
  }
  ++r.responses;
  r.doorbell_due = true;
  ++counters_.responses;
  return Status::Ok();
}

Status RingHost::WriteStatus(Ring& r, uint32_t sleep_epoch) {
  if (r.response_memory != nullptr) {
    // One 8-byte store: the client never sees half a status block.
    ResponseStatus block{r.responses, sleep_epoch};
    uint64_t word = 0;
    std::memcpy(&word, &block, sizeof(word));
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(r.response_memory)).store(word, std::memory_order_release);
    ++counters_.doorbells;
    return Status::Ok();
  }
  // A buffer per put: the status changes while an earlier put may still
  // read the previous one.
  auto block = std::make_shared<ResponseStatus>();
  block->responses = r.responses;
  block->sleep_epoch = sleep_epoch;
  Ring* ring = &r;
  ++ring->puts_in_flight;
  Status s = worker_->PutAsync(r.response_key, r.response_base, block.get(), sizeof(ResponseStatus),
                               [ring, block](const Status&) { --ring->puts_in_flight; });
  if (!s.ok()) {
    --ring->puts_in_flight;
    return s;
  }
  ++counters_.doorbells;
  return Status::Ok();
}

void RingHost::FlushDoorbells() {
  rang_.clear();
  for (auto& [index, ring] : rings_) {
    if (!ring->doorbell_due) continue;
    ring->doorbell_due = false;
    // A failed put means the client's connection failed; its disconnect
    // closes the ring.
    (void)WriteStatus(*ring, sleep_epoch_);
    rang_.push_back(ring.get());
  }
  if (rang_.empty()) return;
  // The doorbells' stores before the wait words' loads, as the client
  // orders its wait word before its doorbell load (kTailBytes in
  // ring_format.h): a client that may be blocked is told, once per wait
  // and only by a doorbell of its own.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (Ring* ring : rang_) {
    const uint32_t wait = std::atomic_ref<uint32_t>(*ring->wait_word).load(std::memory_order_relaxed);
    if (wait == 0 || wait == ring->answered_wait) continue;
    ring->answered_wait = wait;
    if (worker_->Send(ring->ep, kAmRingAnswered, std::span<const uint8_t>()).ok()) ++counters_.answered_wakes;
  }
}

// ---- idle -----------------------------------------------------------------

bool RingHost::MaySleep() {
  if (sleep_epoch_ != 0 || rings_.empty()) return true;
  if (Clock::now() < PollDeadline()) return false;
  // Publish the sleep first, then look once more: an entry posted before a
  // client could read the epoch is taken now; one posted after it comes
  // with a wake-up message.
  sleep_epoch_ = ++epochs_ == 0 ? ++epochs_ : epochs_;
  ++counters_.sleeps;
  for (auto& [index, ring] : rings_) {
    ring->doorbell_due = false;
    (void)WriteStatus(*ring, sleep_epoch_);
  }
  // With one-sided puts (plain stores into shared memory) the epoch's store
  // must be ordered before the tails' loads, as the client orders its tail
  // store before its status load (RingClient::Poll): else each side could
  // miss the other's write, and the node sleep on an announced entry.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return Poll() == 0;
}

uint32_t RingHost::MinWindowUs() const { return std::min(options_.min_poll_window_us, options_.poll_window_us); }

int64_t RingHost::GapUs(Clock::time_point now) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(now - last_entry_).count();
}

void RingHost::RaiseWindowFor(int64_t gap_us) {
  window_us_ = static_cast<uint32_t>(std::clamp<int64_t>(std::max<int64_t>(window_us_, 2 * gap_us), MinWindowUs(),
                                                         options_.poll_window_us));
}

Clock::time_point RingHost::PollDeadline() const {
  if (sleep_epoch_ != 0 || rings_.empty()) return Never();
  return last_entry_ + std::chrono::microseconds(window_us_);
}

void RingHost::OnWake(EndpointId from, std::span<const uint8_t>) {
  if (!RingOf(from).has_value()) return;
  ++counters_.wakes;
  const Clock::time_point now = Clock::now();
  // A wake-up for a sleep a scan already ended (the entry came first) ends
  // nothing and says nothing about the window.
  if (sleep_epoch_ != 0) EndSleep(now);
  polled_empty_ = false;
  last_entry_ = now;
  // Every client learns at its next doorbell that the node is awake.
  (void)Poll();
}

void RingHost::EndSleep(Clock::time_point now) {
  // The gap outlasted the window.  A gap the largest window would have
  // bridged: twice it catches the next such gap without a sleep (a
  // latency-bound client's gaps of just over the window, halved on every
  // wake, woke the node on 83% of its entries).  A longer gap: the
  // window's polling bought nothing but a sleep anyway (issue 15's
  // measurement: its empty scans were three quarters of the node's CPU
  // per GET), so it halves.
  const int64_t gap = GapUs(now);
  if (gap <= static_cast<int64_t>(options_.poll_window_us)) {
    RaiseWindowFor(gap);
  } else {
    window_us_ = std::max(MinWindowUs(), window_us_ / 2);
  }
  sleep_epoch_ = 0;
  ++counters_.sleeps_ended;
}

}  // namespace pulse::net::ring
