// The client's side of the ring request path (ring_client.h).
#include "net/ring_client.h"

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
      slot_seq_(geometry.slots, kFree) {}

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

uint64_t RingClient::TestReserve() {
  const uint64_t seq = next_seq_++;
  slot_seq_[seq % geometry_.slots] = seq;
  ++in_flight_;
  return seq;
}

Result<uint64_t> RingClient::Post(std::span<const uint8_t> payload) {
  if (payload.size() > geometry_.max_payload()) {
    return Status::InvalidArgument("ring entry of " + std::to_string(payload.size()) + " bytes exceeds the slot's " +
                                   std::to_string(geometry_.max_payload()));
  }
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

size_t RingClient::Poll(const ResponseFn& fn) {
  ++counters_.polls;
  // seq_cst, not acquire: orders the tail stores of earlier Post()s (plain
  // stores with one-sided puts) before the load of the sleep epoch below,
  // the counterpart of the node's fence in RingHost::MaySleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  ResponseStatus status;
  std::memcpy(&status, responses_, sizeof(status));
  size_t taken = 0;
  if (status.responses != responses_taken_ && in_flight_ > 0) {
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
      if (state == EntryState::kMalformed) {
        fn(seq, Status::Internal("ring " + std::to_string(ring_id_) + ": malformed response to entry " +
                                 std::to_string(seq)), {});
        continue;
      }
      if (code == kCodeOk) {
        fn(seq, Status::Ok(), payload);
      } else {
        fn(seq, StatusFromWire(code, std::string(payload.begin(), payload.end())), {});
      }
    }
  }
  while (oldest_in_flight_ < next_seq_ && slot_seq_[oldest_in_flight_ % geometry_.slots] != oldest_in_flight_) {
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

}  // namespace pulse::net::ring
