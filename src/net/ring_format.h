// The ring request path's memory formats (seed 002, RAMBDA III-A..C): the
// layout of a connection's request and response rings, the self-validating
// entry framing both rings use, and the setup messages that exchange the
// rings' keys.  Pure functions over bytes: no I/O, no UCX (ring_host.h and
// ring_client.h do the one-sided writes).
//
// A connection (client, memory node) has
//   - a request ring of `slots` slots in the memory node's memory, written
//     by the client only;
//   - one 4-byte tail in the memory node's memory (an allocation of its
//     own per request ring, docs/ring.md): the number of entries the client
//     has posted, wrapping at 2^32;
//   - in the client's memory a status block (ResponseStatus) and a response
//     ring of `slots` slots, written by the memory node only.
// Entry number `seq` (0, 1, 2, ...) goes to slot seq % slots of the
// request ring and is answered in the same slot of the response ring.
//
// That is the single-layer layout (Layout::kSlots).  The double-layer
// layout (Layout::kDoubleLayer, seed 004 Rcmp 5.2) separates where an
// entry's bytes are from the order it is served in:
//   - the request ring is a polling queue of `slots` fixed descriptors
//     (kDescriptorBytes each) followed by a data area of `data_bytes`;
//     descriptor `seq` goes to queue slot seq % slots and names where the
//     entry's bytes lie in the data area (any offset, any length) and
//     where its answer goes in the client's response data area;
//   - the client's status block is followed by a response queue of `slots`
//     descriptors and a response data area of `data_bytes`; the node writes
//     the answer at the place the request named, then the descriptor of its
//     k-th answer (naming the request's seq) into response queue slot
//     k % slots, so answers are found in the order they were written.
// The client allocates both data areas (ring_extents.h) and frees an
// entry's space when it takes the answer, in any order: a slow entry holds
// back nothing but its own bytes, and entries are as long as the data area
// allows.  The node takes descriptors in order and serves each entry as
// soon as its bytes are complete, so an entry still being written holds
// back no entry behind it.
//
// Entries validate themselves, so no write needs to be ordered before
// another (a put of the entry and a put of the tail may land in either
// order):
//   header  u64 tag = seq + 1 (0: never an entry) | u32 length | u32 code
//   payload `length` bytes
//   trailer (at 16 + length rounded up to 8) u64 tag | u64 check
// where `check` is a word-wise 64-bit hash over the length, code and payload.  An entry is
// complete when the header's tag is the one expected for the slot's
// current sequence number, the length fits the slot, and the trailer's tag
// and check match; a torn or partial entry is never taken.  Tags grow by
// `slots` per lap of the ring, so a stale entry from an earlier lap never
// matches either.
//
// Thread-safety: the functions are pure; the structs are values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pulse/status.h"

namespace pulse::net::ring {

// Active-message ids of the ring path's setup and wake-up (they share the
// id space of include/pulse/cluster.h: 1-3 traversal/control, 20-21 RPC,
// 30-33 far-memory agents).
inline constexpr uint16_t kAmRingOpen = 40;       // client -> node: OpenRequest
inline constexpr uint16_t kAmRingOpenReply = 41;  // node -> client: OpenReply
inline constexpr uint16_t kAmRingWake = 42;       // client -> node: u32 sleep epoch seen asleep
// node -> client, empty: answers were written into the ring of a client
// whose wait word says it may be blocked in its Worker (see kTailBytes).
inline constexpr uint16_t kAmRingAnswered = 43;

inline constexpr uint32_t kDefaultSlots = 1024;
inline constexpr uint32_t kDefaultSlotBytes = 512;
inline constexpr size_t kHeaderBytes = 16;
inline constexpr size_t kTrailerBytes = 16;
// The smallest slot that holds an entry with an 8-byte payload.
inline constexpr uint32_t kMinSlotBytes = 64;
inline constexpr uint32_t kMaxSlots = 1u << 16;
inline constexpr uint32_t kMaxSlotBytes = 1u << 20;

enum class Layout : uint32_t {
  kSlots = 0,        // entry seq in slot seq % slots, answered in the same slot
  kDoubleLayer = 1,  // a descriptor queue over a variable-length data area
};
// "slots" or "double"; Parse accepts those (InvalidArgument otherwise).
const char* LayoutName(Layout layout);
Result<Layout> ParseLayout(const std::string& name);

// A descriptor of the double-layer layout: 32 bytes,
//   u64 tag = seq + 1 | u32 offset | u32 bytes | u32 answer_offset |
//   u32 answer_bytes | u64 check
// in the request queue (offset/bytes: the entry in the request data area;
// answer_*: where its answer may go in the response data area), and in the
// response queue with tag = answer number + 1, offset/bytes naming the
// answered seq (low and high 32 bits) and answer_* zero.
inline constexpr size_t kDescriptorBytes = 32;
// Data-area space is handed out in units of this many bytes.
inline constexpr uint32_t kDataUnitBytes = 64;
inline constexpr uint32_t kMaxDataBytes = 1u << 30;

// Ring shape of one connection (both rings have the same).
struct Geometry {
  uint32_t slots = kDefaultSlots;
  // kSlots: the slot, a multiple of 8.  kDoubleLayer: the answer space an
  // entry reserves at least (an entry longer than this reserves its own
  // length), a multiple of 8.
  uint32_t slot_bytes = kDefaultSlotBytes;
  Layout layout = Layout::kSlots;
  // kDoubleLayer only: each data area's bytes (a multiple of
  // kDataUnitBytes); 0 with kSlots.
  uint32_t data_bytes = 0;

  // The request ring's bytes (queue and data area); the response side has
  // the same after its status block.
  size_t ring_bytes() const {
    return layout == Layout::kSlots ? size_t{slots} * slot_bytes : size_t{slots} * kDescriptorBytes + data_bytes;
  }
  // The largest payload an entry of this geometry carries.
  size_t max_payload() const {
    return (layout == Layout::kSlots ? slot_bytes : data_bytes) - kHeaderBytes - kTrailerBytes;
  }
  size_t slot_offset(uint64_t seq) const {
    return static_cast<size_t>(seq % slots) * (layout == Layout::kSlots ? slot_bytes : kDescriptorBytes);
  }
  // kDoubleLayer: where the data area starts in the ring's bytes.
  size_t data_offset() const { return size_t{slots} * kDescriptorBytes; }
  // OK, or InvalidArgument naming the bad field (slots in [1, kMaxSlots],
  // slot_bytes a multiple of 8 in [kMinSlotBytes, kMaxSlotBytes]; with
  // kDoubleLayer data_bytes a multiple of kDataUnitBytes in
  // [slot_bytes, kMaxDataBytes], with kSlots 0).
  Status Validate() const;
};

// The single-layer geometry of `slots` x `slot_bytes`, or the double-layer
// one with the same total bytes of data (each data area slots x
// slot_bytes, rounded up to kDataUnitBytes).
Geometry MakeGeometry(Layout layout, uint32_t slots, uint32_t slot_bytes);

// Entry bytes (header, payload, trailer) of a payload of `length`.
inline size_t EntryBytes(size_t length) { return kHeaderBytes + ((length + 7) & ~size_t{7}) + kTrailerBytes; }

struct Descriptor {
  uint32_t offset = 0;
  uint32_t bytes = 0;
  uint32_t answer_offset = 0;
  uint32_t answer_bytes = 0;
};

// The status block at the start of the client's ring memory, written by
// the memory node after a batch of responses (the response doorbell).
// Both fields are hints: responses validate themselves.
struct ResponseStatus {
  uint32_t responses = 0;    // responses written so far (wraps)
  uint32_t sleep_epoch = 0;  // != 0: the node went to sleep in this epoch
};
// The tail allocation at the memory node (one per request ring, written by
// the client only): the u32 tail, then the client's u32 wait word.  A
// client about to block in its Worker with entries in flight stores a new
// nonzero wait epoch there (then a full fence, then reads its doorbell); a
// node that rang the doorbell (then a full fence) and finds an epoch it has
// not answered yet sends one kAmRingAnswered, whose arrival ends the
// client's wait.  Either the client sees the doorbell or the node sees the
// epoch, so no answer waits for a timer.  0: the client is not waiting.
inline constexpr size_t kTailBytes = 8;

// Written as one 8-byte word where the node stores it directly (RingHost).
static_assert(sizeof(ResponseStatus) == 8);
inline constexpr size_t kStatusBytes = 64;  // one cache line; the response ring follows

// Entry codes: 0 for a request; a response carries the wire form of its
// status (StatusCodeToWire), 0 meaning OK.
inline constexpr uint32_t kCodeOk = 0;

// Writes an entry for `seq` with `code` and `payload` into `slot`
// (slot_bytes long).  Errors: InvalidArgument if the payload does not fit.
Status EncodeEntry(std::span<uint8_t> slot, uint64_t seq, uint32_t code,
                   std::span<const uint8_t> payload);

enum class EntryState {
  kAbsent,     // the header does not carry this seq's tag: not written yet
  kTorn,       // the header is there, the trailer or check not (yet)
  kMalformed,  // the header is there but its length cannot be right
  kComplete,
};
// Examines the entry for `seq` in `slot` (which a peer may be writing at
// the same time) and returns its state; if kComplete, `*payload` and
// `*code` are set (otherwise `*payload` holds scratch bytes).  The bytes are copied out first and the copy is
// checked, never the live slot, so what it returns is what one consistent
// entry said, and the caller acts on bytes that cannot change under it.
EntryState CopyEntry(std::span<const uint8_t> slot, uint64_t seq, std::vector<uint8_t>* payload,
                     uint32_t* code);
// Clears a processed entry (zero header and trailer tag).
void ClearEntry(std::span<uint8_t> slot);

// Writes descriptor number `number` (its seq, or the answer number).
void EncodeDescriptor(std::span<uint8_t> slot, uint64_t number, const Descriptor& d);
// kAbsent (not this number's), kTorn (this number's, check wrong) or
// kComplete with `*d` set; from a copy, as CopyEntry.
EntryState CopyDescriptor(std::span<const uint8_t> slot, uint64_t number, Descriptor* d);
// Zeroes a taken descriptor's tag.
void ClearDescriptor(std::span<uint8_t> slot);

// ---- setup messages -----------------------------------------------------

// Client -> node: open a ring pair.  The response ring's region key lets
// the node write the client's status block and response ring and nothing
// else of the client.
// Version 1 carries kSlots geometries only; version 2 adds the layout and
// data_bytes (both are accepted).
struct OpenRequest {
  uint32_t version = 2;
  Geometry geometry;
  uint64_t response_base = 0;  // address of the status block; ring at + kStatusBytes
  std::vector<uint8_t> response_rkey;
};
// Node -> client.  code != 0: refused (the wire form of the status; the
// message text in `error`).  Else the keys of this connection's request
// ring and of its tail, each allocated and registered on its
// own, reaching nothing else of the node.
struct OpenReply {
  uint32_t code = 0;
  std::string error;
  uint32_t ring_id = 0;
  uint64_t ring_base = 0;
  uint64_t tail_address = 0;
  std::vector<uint8_t> ring_rkey;
  std::vector<uint8_t> tail_rkey;
};

std::vector<uint8_t> EncodeOpenRequest(const OpenRequest& r);
// Errors: InvalidArgument naming the field that is short or out of range.
Result<OpenRequest> DecodeOpenRequest(std::span<const uint8_t> bytes);
std::vector<uint8_t> EncodeOpenReply(const OpenReply& r);
Result<OpenReply> DecodeOpenReply(std::span<const uint8_t> bytes);

}  // namespace pulse::net::ring
