// The client's side of the ring request path (ring_client.h).
#include "net/ring_client.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace pulse::net::ring {

RingClient::RingClient(Worker* worker, EndpointId ep, const Geometry& geometry)
    : worker_(worker),
      ep_(ep),
      geometry_(geometry),
      staging_(geometry.ring_bytes()),
      slot_seq_(geometry.layout == Layout::kSlots ? geometry.slots : 0, kFree) {
  if (double_layer()) {
    request_space_.emplace(geometry.data_bytes, kDataUnitBytes);
    answer_space_.emplace(geometry.data_bytes, kDataUnitBytes);
    reserved_.reserve(geometry.slots);
  }
}

RingClient::~RingClient() {
  // Entry and tail puts read our buffers until they complete.
  std::shared_ptr<size_t> pending = puts_in_flight_;
  (void)worker_->RunUntil([&pending] { return *pending == 0; }, std::chrono::seconds(1));
  if (*pending != 0) {
    // Completions still to come must find the buffers: leave them allocated.
    RetirePages(std::move(staging_));
  }
  // The response ring goes with region_ even with answers still due: it is
  // UCX's allocation, so a late answer lands in the node's own mapping of
  // the shared segment (one host), is refused by the NIC (RDMA) or by this
  // Worker's region table (pulse messages), never in reused memory here.
  // (Leaking it instead makes ucp_cleanup abort on a region in use.)
}

Result<std::unique_ptr<RingClient>> RingClient::Open(Worker* worker, EndpointId ep,
                                                     const RingClientOptions& options) {
  if (worker == nullptr) return Status::InvalidArgument("ring client: worker is null");
  PULSE_RETURN_IF_ERROR(options.geometry.Validate());
  std::unique_ptr<RingClient> c(new RingClient(worker, ep, options.geometry));
  if (!c->staging_.valid()) {
    return Status::ResourceExhausted("ring client: no memory for a ring of " +
                                     std::to_string(options.geometry.ring_bytes()) + " bytes");
  }
  PULSE_ASSIGN_OR_RETURN(c->region_, worker->AllocateMemory(kStatusBytes + options.geometry.ring_bytes()));
  c->responses_ = static_cast<uint8_t*>(c->region_.data());

  OpenRequest request;
  request.geometry = options.geometry;
  request.response_base = c->region_.remote_address();
  request.response_rkey.assign(c->region_.rkey().begin(), c->region_.rkey().end());
  std::optional<Result<OpenReply>> reply;
  worker->SetHandler(kAmRingOpenReply, [&reply, ep](EndpointId from, std::span<const uint8_t> p) {
    if (from == ep && !reply.has_value()) reply = DecodeOpenReply(p);
  });
  Status sent = worker->Send(ep, kAmRingOpen, EncodeOpenRequest(request));
  Status waited = sent.ok() ? worker->RunUntil([&reply] { return reply.has_value(); }, options.open_timeout) : sent;
  worker->SetHandler(kAmRingOpenReply, {});
  if (!waited.ok()) {
    if (waited.code() == Status::Code::kTimeout) {
      return Status::Timeout("ring open on endpoint " + std::to_string(ep) + ": no answer (the node has no ring path?)");
    }
    return waited;
  }
  PULSE_ASSIGN_OR_RETURN(OpenReply r, std::move(*reply));
  if (r.code != 0) return StatusFromWire(r.code, "ring open refused: " + r.error);
  PULSE_ASSIGN_OR_RETURN(c->ring_key_, worker->ImportRkey(ep, r.ring_rkey));
  PULSE_ASSIGN_OR_RETURN(c->tail_key_, worker->ImportRkey(ep, r.tail_rkey));
  if (c->ring_key_.base() != r.ring_base || c->ring_key_.size() < options.geometry.ring_bytes() ||
      c->tail_key_.base() != r.tail_address || c->tail_key_.size() < sizeof(uint32_t)) {
    return Status::Internal("ring open: the node's keys do not cover the ring and tail it named");
  }
  // Whether the puts are one-sided shows only in the imported keys (UCX maps
  // the node's UCX-allocated rings on one host; docs/ring.md).  A refusal
  // here leaves the node's ring allocated until this connection closes.
  if (options.require_native_rma && (!c->ring_key_.uses_ucx_rma() || !c->tail_key_.uses_ucx_rma())) {
    return Status::FailedPrecondition("ring path on endpoint " + std::to_string(ep) +
                                      ": the transport has no one-sided puts to the node's rings (UCX would emulate them)");
  }
  c->ring_memory_ = c->ring_key_.mapped();
  c->tail_memory_ = reinterpret_cast<uint32_t*>(c->tail_key_.mapped());
  if (c->ring_memory_ == nullptr || c->tail_memory_ == nullptr) {
    c->ring_memory_ = nullptr;
    c->tail_memory_ = nullptr;
  } else if (c->tail_key_.size() >= kTailBytes) {
    c->wait_word_ = c->tail_memory_ + 1;
  }
  c->ring_id_ = r.ring_id;
  c->ring_base_ = r.ring_base;
  c->tail_address_ = r.tail_address;
  return c;
}

uint64_t RingClient::TestReserve(Descriptor* where) {
  const uint64_t seq = next_seq_++;
  if (double_layer()) {
    Result<Descriptor> space = Reserve(geometry_.slot_bytes - kHeaderBytes - kTrailerBytes);
    if (space.ok()) {
      reserved_[seq] = *space;
      if (where != nullptr) *where = *space;
    }
  } else {
    slot_seq_[seq % geometry_.slots] = seq;
  }
  ++in_flight_;
  return seq;
}

Result<Descriptor> RingClient::Reserve(size_t length) {
  const size_t entry = EntryBytes(length);
  const size_t answer = std::max<size_t>(entry, geometry_.slot_bytes);
  std::optional<size_t> at = request_space_->Allocate(entry);
  std::optional<size_t> answer_at = at.has_value() ? answer_space_->Allocate(answer) : std::nullopt;
  if (!answer_at.has_value()) {
    if (at.has_value()) request_space_->Free(*at, entry);
    ++counters_.refused_space;
    return Status::ResourceExhausted("ring " + std::to_string(ring_id_) + ": no room for an entry of " +
                                     std::to_string(length) + " bytes and its answer in the data areas");
  }
  const auto round = [](size_t n) { return (n + kDataUnitBytes - 1) / kDataUnitBytes * kDataUnitBytes; };
  return Descriptor{static_cast<uint32_t>(*at), static_cast<uint32_t>(entry), static_cast<uint32_t>(*answer_at),
                    static_cast<uint32_t>(round(answer))};
}

void RingClient::Release(const Descriptor& where) {
  request_space_->Free(where.offset, where.bytes);
  answer_space_->Free(where.answer_offset, where.answer_bytes);
}

Status RingClient::PutAt(size_t offset, size_t bytes) {
  if (ring_memory_ != nullptr) {  // written in place already
    ++counters_.stores;
    return Status::Ok();
  }
  std::shared_ptr<size_t> pending = puts_in_flight_;
  ++*pending;
  Status s = worker_->PutAsync(ring_key_, ring_base_ + offset, staging_.data() + offset, bytes,
                               [pending](const Status&) { --*pending; });
  if (!s.ok()) --*pending;
  return s;
}

Result<uint64_t> RingClient::PostDoubleLayer(std::span<const uint8_t> payload) {
  if (in_flight_ >= geometry_.slots) {
    ++counters_.refused_full;
    return Status::ResourceExhausted("ring " + std::to_string(ring_id_) + ": every descriptor is in flight");
  }
  PULSE_ASSIGN_OR_RETURN(Descriptor where, Reserve(payload.size()));
  const uint64_t seq = next_seq_;
  const size_t entry_offset = geometry_.data_offset() + where.offset;
  const size_t descriptor_offset = geometry_.slot_offset(seq);
  // The entry's bytes, then its descriptor (seed 004: a message enters the
  // polling queue once its data is written); the node checks both, so over
  // puts that land in any order it waits for the bytes of that entry alone.
  uint8_t* out = ring_memory_ != nullptr ? ring_memory_ : staging_.data();
  Status s = EncodeEntry(std::span<uint8_t>(out + entry_offset, where.bytes), seq, kCodeOk, payload);
  if (s.ok()) {
    EncodeDescriptor(std::span<uint8_t>(out + descriptor_offset, kDescriptorBytes), seq, where);
    s = PutAt(entry_offset, where.bytes);
  }
  if (s.ok()) s = PutAt(descriptor_offset, kDescriptorBytes);
  if (!s.ok()) {
    Release(where);
    return s;
  }
  reserved_.emplace(seq, where);
  ++next_seq_;
  ++in_flight_;
  ++counters_.posted;
  if (ring_memory_ != nullptr) {
    std::atomic_ref<uint32_t>(*tail_memory_).store(static_cast<uint32_t>(next_seq_), std::memory_order_release);
    ++counters_.stores;
    return seq;
  }
  PULSE_RETURN_IF_ERROR(WriteTail());
  return seq;
}

Result<uint64_t> RingClient::Post(std::span<const uint8_t> payload) {
  if (payload.size() > geometry_.max_payload()) {
    return Status::InvalidArgument("ring entry of " + std::to_string(payload.size()) + " bytes exceeds the slot's " +
                                   std::to_string(geometry_.max_payload()));
  }
  if (double_layer()) return PostDoubleLayer(payload);
  if (!has_credit()) {
    ++counters_.refused_full;
    return Status::ResourceExhausted("ring " + std::to_string(ring_id_) + ": every slot is in flight");
  }
  const uint64_t seq = next_seq_;
  const size_t offset = geometry_.slot_offset(seq);
  if (ring_memory_ != nullptr) {
    // Straight into the node's slot, then the tail (Open checked both keys'
    // extents); the entry validates itself, so the order is for speed only.
    PULSE_RETURN_IF_ERROR(EncodeEntry(std::span<uint8_t>(ring_memory_ + offset, geometry_.slot_bytes), seq, kCodeOk,
                                      payload));
    slot_seq_[seq % geometry_.slots] = seq;
    ++next_seq_;
    ++in_flight_;
    ++counters_.posted;
    std::atomic_ref<uint32_t>(*tail_memory_).store(static_cast<uint32_t>(next_seq_), std::memory_order_release);
    counters_.stores += 2;  // the entry and the tail
    return seq;
  }
  std::span<uint8_t> out(staging_.data() + offset, geometry_.slot_bytes);
  PULSE_RETURN_IF_ERROR(EncodeEntry(out, seq, kCodeOk, payload));
  const size_t used = kHeaderBytes + ((payload.size() + 7) & ~size_t{7}) + kTrailerBytes;
  std::shared_ptr<size_t> pending = puts_in_flight_;
  ++*pending;
  Status s = worker_->PutAsync(ring_key_, ring_base_ + offset, out.data(), used,
                               [pending](const Status&) { --*pending; });
  if (!s.ok()) {
    --*pending;
    return s;
  }
  slot_seq_[seq % geometry_.slots] = seq;
  ++next_seq_;
  ++in_flight_;
  ++counters_.posted;
  PULSE_RETURN_IF_ERROR(WriteTail());
  return seq;
}

Status RingClient::WriteTail() {
  // A buffer per put: a later Post() changes the tail while this put may
  // still read it.
  auto tail = std::make_shared<uint32_t>(static_cast<uint32_t>(next_seq_));
  std::shared_ptr<size_t> pending = puts_in_flight_;
  ++*pending;
  Status s = worker_->PutAsync(tail_key_, tail_address_, tail.get(), sizeof(uint32_t),
                               [pending, tail](const Status&) { --*pending; });
  if (!s.ok()) --*pending;
  return s;
}

bool RingClient::PrepareToWait() {
  if (wait_word_ == nullptr) return false;
  if (in_flight_ == 0) return true;
  wait_epoch_ = wait_epoch_ + 1 == 0 ? 1 : wait_epoch_ + 1;
  std::atomic_ref<uint32_t>(*wait_word_).store(wait_epoch_, std::memory_order_relaxed);
  ++counters_.stores;
  // The wait word's store before the doorbell's load (has_responses), the
  // counterpart of the node's fence in RingHost::FlushDoorbells.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  waiting_ = true;
  ++counters_.waits;
  return true;
}

void RingClient::DoneWaiting() {
  if (!waiting_) return;
  waiting_ = false;
  std::atomic_ref<uint32_t>(*wait_word_).store(0, std::memory_order_relaxed);
  ++counters_.stores;
}

bool RingClient::has_responses() const {
  if (in_flight_ == 0) return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  ResponseStatus status;
  std::memcpy(&status, responses_, sizeof(status));
  return status.responses != responses_taken_ && idle_doorbell_ != status.responses;
}

uint32_t RingClient::doorbell() const {
  std::atomic_thread_fence(std::memory_order_acquire);
  ResponseStatus status;
  std::memcpy(&status, responses_, sizeof(status));
  return status.responses;
}

void RingClient::Deliver(const ResponseFn& fn, uint64_t seq, EntryState state, uint32_t code,
                         std::span<const uint8_t> payload) const {
  if (state == EntryState::kMalformed) {
    fn(seq, Status::Internal("ring " + std::to_string(ring_id_) + ": malformed response to entry " + std::to_string(seq)),
       {});
  } else if (code == kCodeOk) {
    fn(seq, Status::Ok(), payload);
  } else {
    fn(seq, StatusFromWire(code, std::string(payload.begin(), payload.end())), {});
  }
}

size_t RingClient::Poll(const ResponseFn& fn) {
  ++counters_.polls;
  // seq_cst, not acquire: orders the tail stores of earlier Post()s (plain
  // stores with one-sided puts) before the load of the sleep epoch below,
  // the counterpart of the node's fence in RingHost::MaySleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  ResponseStatus status;
  std::memcpy(&status, responses_, sizeof(status));
  size_t taken = 0;
  if (double_layer()) {
    if (status.responses != responses_taken_ && in_flight_ > 0) taken = PollDoubleLayer(fn);
  } else if (status.responses != responses_taken_ && in_flight_ > 0) {
    std::vector<uint8_t> payload;
    // Oldest first: slots from the oldest seq in flight onwards (not the
    // whole ring: a latency-bound client has one or two entries in flight,
    // and scanning 1024 slots per answer was 8% of its CPU).
    const uint64_t lap = next_seq_ - std::min<uint64_t>(next_seq_, geometry_.slots);
    for (uint64_t seq = std::max(oldest_in_flight_, lap); seq < next_seq_ && in_flight_ > 0; ++seq) {
      const size_t slot = seq % geometry_.slots;
      if (slot_seq_[slot] != seq) continue;
      std::span<uint8_t> bytes(responses_ + kStatusBytes + geometry_.slot_offset(seq), geometry_.slot_bytes);
      uint32_t code = 0;
      EntryState state = CopyEntry(bytes, seq, &payload, &code);
      if (state == EntryState::kAbsent || state == EntryState::kTorn) continue;
      ClearEntry(bytes);
      slot_seq_[slot] = kFree;
      --in_flight_;
      ++responses_taken_;
      ++taken;
      ++counters_.responses;
      Deliver(fn, seq, state, code, payload);
    }
  }
  while (!double_layer() && oldest_in_flight_ < next_seq_ &&
         slot_seq_[oldest_in_flight_ % geometry_.slots] != oldest_in_flight_) {
    ++oldest_in_flight_;
  }
  if (taken == 0) {
    idle_doorbell_ = status.responses;
  } else {
    idle_doorbell_.reset();
  }
  if (in_flight_ > 0 && status.sleep_epoch != 0 && status.sleep_epoch != woken_epoch_) {
    woken_epoch_ = status.sleep_epoch;
    std::vector<uint8_t> epoch(4);
    std::memcpy(epoch.data(), &status.sleep_epoch, 4);
    if (worker_->Send(ep_, kAmRingWake, std::move(epoch)).ok()) ++counters_.wakes_sent;
  }
  return taken;
}

size_t RingClient::PollDoubleLayer(const ResponseFn& fn) {
  size_t taken = 0;
  std::vector<uint8_t> payload;
  uint8_t* ring = responses_ + kStatusBytes;
  // The response queue in the order the node answered: no scan of the
  // entries in flight.  A descriptor whose answer's bytes have not landed
  // yet (puts in any order) stops the walk until they have.
  while (in_flight_ > 0) {
    std::span<uint8_t> slot(ring + geometry_.slot_offset(answers_taken_), kDescriptorBytes);
    Descriptor answer;
    if (CopyDescriptor(slot, answers_taken_, &answer) != EntryState::kComplete) break;
    const uint64_t seq = uint64_t{answer.offset} | uint64_t{answer.bytes} << 32;
    auto it = reserved_.find(seq);
    if (it == reserved_.end()) {
      // Not an entry of ours in flight: the node's mistake; skip it.
      ClearDescriptor(slot);
      ++answers_taken_;
      continue;
    }
    const Descriptor where = it->second;
    std::span<uint8_t> bytes(ring + geometry_.data_offset() + where.answer_offset, where.answer_bytes);
    uint32_t code = 0;
    EntryState state = CopyEntry(bytes, seq, &payload, &code);
    if (state == EntryState::kAbsent || state == EntryState::kTorn) break;
    ClearEntry(bytes);
    ClearDescriptor(slot);
    ++answers_taken_;
    reserved_.erase(it);
    Release(where);
    --in_flight_;
    ++responses_taken_;
    ++taken;
    ++counters_.responses;
    Deliver(fn, seq, state, code, payload);
  }
  return taken;
}

}  // namespace pulse::net::ring
