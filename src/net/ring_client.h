// RingClient: the client's side of the ring request path with one memory
// node (ring_host.h has the node's side, ring_format.h the formats,
// docs/ring.md the design).
//
// Open() registers this client's status block and response ring (on pages
// of their own; the node's key reaches nothing else of the client), asks
// the node for a ring pair over the connection and imports the keys of its
// request ring and of its tail.  Post() then writes an entry into the next
// slot and the new tail, both one-sided (no order needed between them:
// entries validate themselves); Poll() takes the responses the node wrote
// back into the same slots.
//
// Credits: slot seq % slots is free again once the response of the entry
// that used it has been taken by Poll(); Post() refuses (ResourceExhausted)
// when the next slot is not free, so a client never has more entries in
// flight than slots and never overwrites an entry the node has not
// answered.  Entries are answered in any order; a slot is reused only in
// sequence, so one slow answer holds back posts a lap later.
//
// With Layout::kDoubleLayer (ring_format.h) Post() takes space for the
// entry and for its answer from the two data areas (ExtentAllocator) and
// writes a descriptor naming both; Poll() follows the response queue, in
// the order the node answered, and frees an entry's space when it takes
// its answer.  A post is refused only when `slots` entries are in flight
// or a data area has no room left (refused_full, refused_space): a slow
// answer holds back no other entry's credit.
//
// Wake-up: when Poll() finds a sleep epoch in the status block while
// entries are in flight, it sends the node one kAmRingWake for that epoch.
//
// Thread-safety: none; it belongs to the thread that drives its Worker,
// and must be destroyed before the Worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "net/ring_extents.h"
#include "net/ring_format.h"
#include "net/ring_memory.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::net::ring {

struct RingClientOptions {
  Geometry geometry;
  Duration open_timeout = std::chrono::seconds(5);
  // Refuse (FailedPrecondition) a connection whose keys to the node's rings
  // do not use UCX's own one-sided puts (TCP; shared memory the node did not
  // allocate with UCX): the message path is better there.  Decided after
  // the node opened the ring, which then stays until the connection closes.
  bool require_native_rma = true;
};

struct RingClientCounters {
  uint64_t posted = 0;
  uint64_t responses = 0;
  uint64_t refused_full = 0;  // Post() without a free slot
  uint64_t refused_space = 0;  // kDoubleLayer: Post() without room in a data area
  uint64_t wakes_sent = 0;
  uint64_t polls = 0;
  uint64_t waits = 0;  // PrepareToWait() calls that published a wait epoch
  // Writes into the node's ring and tail mapped here (entry, descriptor,
  // tail; the wait word's epoch and its clearing) done as plain stores, so
  // not in the Worker's rma_ops: where the ring is not mapped the first
  // three are puts there and the wait word is not used.  A client's
  // one-sided operations are rma_ops plus these, on any transport.
  uint64_t stores = 0;
};

class RingClient {
 public:
  // Opens a ring pair with the peer of `ep` (a RingHost), waiting at most
  // options.open_timeout (progressing `worker`; not from inside one of its
  // handlers).  Errors: InvalidArgument (bad geometry), FailedPrecondition
  // (require_native_rma and the transport emulates puts), Timeout (no
  // answer: the node has no ring path), or the node's refusal with its code
  // (ResourceExhausted: no ring free, ...).
  static Result<std::unique_ptr<RingClient>> Open(Worker* worker, EndpointId ep,
                                                  const RingClientOptions& options);
  ~RingClient();
  RingClient(const RingClient&) = delete;
  RingClient& operator=(const RingClient&) = delete;

  // Posts `payload` as the next entry; returns its sequence number (Poll()
  // reports the answer under it).  Errors: ResourceExhausted (no free slot:
  // take responses first), InvalidArgument (longer than
  // geometry.max_payload()), or the put's error (the connection failed).
  Result<uint64_t> Post(std::span<const uint8_t> payload);

  // What Poll() hands over per response: the entry's sequence number, the
  // node's status (its code as sent; the payload is the message text if
  // not OK) and the payload (valid during the call).
  using ResponseFn = std::function<void(uint64_t seq, const Status& status, std::span<const uint8_t> payload)>;
  // Takes the responses that arrived, in slot order, and sends a wake-up
  // if the node went to sleep with entries of ours in flight.  Returns the
  // number taken.
  size_t Poll(const ResponseFn& fn);

  uint32_t in_flight() const { return in_flight_; }
  // Whether the doorbell says responses wait to be taken: it differs from
  // the count taken, and Poll() has not already looked under this doorbell
  // and found nothing (a doorbell may land before its entries, or count
  // fewer than were taken: a waiter that trusted it alone would spin
  // without progressing the Worker that brings the rest).
  bool has_responses() const;
  // The status block's doorbell: how many responses the node says it wrote
  // (wraps).  A change means news from the node even when Poll() found no
  // complete entry yet (the doorbell may land first).
  uint32_t doorbell() const;
  // Before the caller blocks in its Worker with entries in flight: stores a
  // new wait epoch into the node's wait word (kTailBytes in ring_format.h)
  // and fences, so that the node's next doorbell on this ring comes with a
  // kAmRingAnswered message, whose arrival ends the wait.  The caller must
  // look at has_responses() after this call and block only if it says no.
  // Returns false (and does nothing) where the node's tail is not mapped
  // here (puts carried by messages, RDMA): the caller polls as before.
  bool PrepareToWait();
  // The caller no longer blocks: clears the wait word (a later doorbell
  // then sends no message).
  void DoneWaiting();
  // Whether the next Post() has a slot (kDoubleLayer: fewer than `slots`
  // in flight; Post() may still find no room for a long entry).
  bool has_credit() const {
    return double_layer() ? in_flight_ < geometry_.slots : slot_seq_[next_seq_ % geometry_.slots] == kFree;
  }
  const Geometry& geometry() const { return geometry_; }
  uint32_t ring_id() const { return ring_id_; }
  const RingClientCounters& counters() const { return counters_; }
  // True if the node's ring is reached with UCX's own one-sided puts
  // (UCX-allocated shared memory on one host, RDMA), false if over pulse's
  // messages (RmaPath::kMessages).
  bool native_rma() const { return ring_key_.uses_ucx_rma(); }

  // TEST HOOK: where this client's entry for `seq` goes in the node's
  // memory (kDoubleLayer: its descriptor), and the key to write there (to
  // write torn or garbage entries).
  uint64_t TestSlotAddress(uint64_t seq) const { return ring_base_ + geometry_.slot_offset(seq); }
  // kDoubleLayer: the address of byte `offset` of the node's request data area.
  uint64_t TestDataAddress(size_t offset) const { return ring_base_ + geometry_.data_offset() + offset; }
  const RemoteKey& TestRingKey() const { return ring_key_; }
  const RemoteKey& TestTailKey() const { return tail_key_; }
  uint64_t TestTailAddress() const { return tail_address_; }
  // Reserves the next seq as if Post() had written it, writing nothing
  // (kDoubleLayer: with `*where` the space it took, answer space included).
  uint64_t TestReserve(Descriptor* where = nullptr);
  // This client's status block, response ring following (to play the node).
  uint8_t* TestResponseMemory() const { return responses_; }

 private:
  static constexpr uint64_t kFree = ~uint64_t{0};
  RingClient(Worker* worker, EndpointId ep, const Geometry& geometry);
  Status WriteTail();
  bool double_layer() const { return geometry_.layout == Layout::kDoubleLayer; }
  // kDoubleLayer: space for an entry of `length` and its answer, or
  // ResourceExhausted (counted).
  Result<Descriptor> Reserve(size_t length);
  void Release(const Descriptor& where);
  // Writes `bytes` at `offset` of the node's ring: a plain copy where it is
  // mapped here, else a put from the same offset of staging_.
  Status PutAt(size_t offset, size_t bytes);
  Result<uint64_t> PostDoubleLayer(std::span<const uint8_t> payload);
  // Hands a taken response to `fn`: its status (Internal if malformed) and payload.
  void Deliver(const ResponseFn& fn, uint64_t seq, EntryState state, uint32_t code,
               std::span<const uint8_t> payload) const;
  size_t PollDoubleLayer(const ResponseFn& fn);

  Worker* worker_;
  EndpointId ep_;
  Geometry geometry_;
  // The status block, then the response ring: allocated by UCX
  // (Worker::AllocateMemory) so that on one host the node writes it with
  // plain stores; region_ owns it and reaches it alone.
  MemoryRegion region_;
  uint8_t* responses_ = nullptr;
  PageMemory staging_;     // entries as written, the source of their puts
  RemoteKey ring_key_;
  RemoteKey tail_key_;
  // The node's request ring and tail mapped here (on one host,
  // RemoteKey::mapped), or nullptr: Post() then writes them with plain
  // stores, no put request, completion or staging copy per entry.
  uint8_t* ring_memory_ = nullptr;
  uint32_t* tail_memory_ = nullptr;
  uint32_t* wait_word_ = nullptr;  // tail_memory_ + 1, if the node's tail allocation has one
  uint32_t wait_epoch_ = 0;
  bool waiting_ = false;  // the wait word holds wait_epoch_
  uint32_t ring_id_ = 0;
  uint64_t ring_base_ = 0;
  uint64_t tail_address_ = 0;
  std::vector<uint64_t> slot_seq_;  // seq in flight per slot, or kFree (kSlots)
  // kDoubleLayer: the two data areas' free space (request, answer), the
  // space of each entry in flight by seq, and the answers taken so far
  // (the response queue's numbering).
  std::optional<ExtentAllocator> request_space_;
  std::optional<ExtentAllocator> answer_space_;
  std::unordered_map<uint64_t, Descriptor> reserved_;
  uint64_t answers_taken_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t oldest_in_flight_ = 0;  // no seq below it is in flight (Poll's scan starts there)
  uint32_t in_flight_ = 0;
  uint32_t responses_taken_ = 0;  // compared with the doorbell (wraps)
  uint32_t woken_epoch_ = 0;
  std::optional<uint32_t> idle_doorbell_;  // a doorbell under which Poll() found nothing
  // Puts still reading staging_ or a tail buffer: destruction waits for them.
  std::shared_ptr<size_t> puts_in_flight_ = std::make_shared<size_t>(0);
  RingClientCounters counters_;
};

}  // namespace pulse::net::ring
