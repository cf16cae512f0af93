// Entry framing and setup messages of the ring path (ring_format.h).
#include "net/ring_format.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "protocol/byte_codec.h"

namespace pulse::net::ring {
namespace {

size_t Align8(size_t n) { return (n + 7) & ~size_t{7}; }

// A 64-bit multiply-xorshift hash over the length, the code and the
// payload, eight bytes a step (the tail zero-padded): a torn payload (bytes
// of an earlier lap under a fresh header and trailer) fails it with
// overwhelming probability.  Word-wise because both sides hash every entry
// and every answer: byte-wise FNV-1a cost about 0.5 us per 300-byte KV
// entry on this host, a third of the memory node's CPU per ring GET
// (issue 15's measurement).  Four lanes (word i feeds lane i % 4, folded
// together at the end) because one lane is a chain of dependent multiplies:
// with four the multiplies overlap, and the hash of a 300-byte entry,
// computed twice per ring GET at the node (the entry, the answer), cost a
// third of what one lane did (10% of the node's CPU per GET before).  Every
// word still goes through a bijective step of its lane, so a changed word
// changes its lane's state, as before.
uint64_t Check(uint32_t length, uint32_t code, std::span<const uint8_t> payload) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  auto mix = [](uint64_t& h, uint64_t w) {
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  };
  uint64_t lane[4] = {1469598103934665603ull, 0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull};
  mix(lane[0], static_cast<uint64_t>(length) | static_cast<uint64_t>(code) << 32);
  const uint8_t* p = payload.data();
  const size_t n = payload.size();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, 32);
    mix(lane[0], w[0]);
    mix(lane[1], w[1]);
    mix(lane[2], w[2]);
    mix(lane[3], w[3]);
  }
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    mix(lane[(i / 8) % 4], w);
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    mix(lane[(i / 8) % 4], w ^ (uint64_t{n - i} << 56));
  }
  uint64_t h = lane[0];
  mix(h, lane[1]);
  mix(h, lane[2]);
  mix(h, lane[3]);
  return h;
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void Store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

constexpr uint64_t kMaxRkeyBytes = 4096;
constexpr uint64_t kMaxErrorBytes = 4096;

}  // namespace

const char* LayoutName(Layout layout) { return layout == Layout::kDoubleLayer ? "double" : "slots"; }

Result<Layout> ParseLayout(const std::string& name) {
  if (name == "slots") return Layout::kSlots;
  if (name == "double") return Layout::kDoubleLayer;
  return Status::InvalidArgument("ring layout \"" + name + "\" is neither slots nor double");
}

Geometry MakeGeometry(Layout layout, uint32_t slots, uint32_t slot_bytes) {
  Geometry g{slots, slot_bytes, layout, 0};
  if (layout == Layout::kDoubleLayer) {
    const uint64_t bytes = uint64_t{slots} * slot_bytes;
    const uint64_t rounded = (bytes + kDataUnitBytes - 1) / kDataUnitBytes * kDataUnitBytes;
    g.data_bytes = static_cast<uint32_t>(std::min<uint64_t>(rounded, kMaxDataBytes));
  }
  return g;
}

Status Geometry::Validate() const {
  if (layout != Layout::kSlots && layout != Layout::kDoubleLayer) {
    return Status::InvalidArgument("ring layout " + std::to_string(static_cast<uint32_t>(layout)) +
                                   " is neither 0 (slots) nor 1 (double)");
  }
  if (layout == Layout::kSlots && data_bytes != 0) {
    return Status::InvalidArgument("ring data_bytes " + std::to_string(data_bytes) + " with the slots layout (must be 0)");
  }
  if (layout == Layout::kDoubleLayer &&
      (data_bytes % kDataUnitBytes != 0 || data_bytes < slot_bytes || data_bytes > kMaxDataBytes)) {
    return Status::InvalidArgument("ring data_bytes " + std::to_string(data_bytes) + " not a multiple of " +
                                   std::to_string(kDataUnitBytes) + " in [slot_bytes " + std::to_string(slot_bytes) +
                                   ", " + std::to_string(kMaxDataBytes) + "]");
  }
  if (slots == 0 || slots > kMaxSlots) {
    return Status::InvalidArgument("ring slots " + std::to_string(slots) + " not in [1, " +
                                   std::to_string(kMaxSlots) + "]");
  }
  if (slot_bytes < kMinSlotBytes || slot_bytes > kMaxSlotBytes || slot_bytes % 8 != 0) {
    return Status::InvalidArgument("ring slot_bytes " + std::to_string(slot_bytes) +
                                   " not a multiple of 8 in [" + std::to_string(kMinSlotBytes) + ", " +
                                   std::to_string(kMaxSlotBytes) + "]");
  }
  return Status::Ok();
}

Status EncodeEntry(std::span<uint8_t> slot, uint64_t seq, uint32_t code,
                   std::span<const uint8_t> payload) {
  if (slot.size() < kHeaderBytes + kTrailerBytes ||
      payload.size() > slot.size() - kHeaderBytes - kTrailerBytes) {
    return Status::InvalidArgument("ring entry payload of " + std::to_string(payload.size()) +
                                   " bytes does not fit a slot of " + std::to_string(slot.size()));
  }
  const uint64_t tag = seq + 1;
  const uint32_t length = static_cast<uint32_t>(payload.size());
  uint8_t* p = slot.data();
  Store<uint64_t>(p, tag);
  Store<uint32_t>(p + 8, length);
  Store<uint32_t>(p + 12, code);
  if (!payload.empty()) std::memcpy(p + kHeaderBytes, payload.data(), payload.size());
  uint8_t* trailer = p + kHeaderBytes + Align8(length);
  Store<uint64_t>(trailer, tag);
  // Over the caller's bytes, not the slot's: the slot may be the peer's
  // memory (mapped), whose lines the peer's core holds.
  Store<uint64_t>(trailer + 8, Check(length, code, payload));
  return Status::Ok();
}

EntryState CopyEntry(std::span<const uint8_t> slot, uint64_t seq, std::vector<uint8_t>* payload,
                     uint32_t* code) {
  // The slot is written by a peer's one-sided puts behind the compiler's
  // back: order our reads after whatever made us look.
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t tag = seq + 1;
  if (slot.size() < kHeaderBytes + kTrailerBytes) return EntryState::kMalformed;
  uint8_t header[kHeaderBytes];
  std::memcpy(header, slot.data(), kHeaderBytes);
  if (Load<uint64_t>(header) != tag) return EntryState::kAbsent;
  const uint32_t length = Load<uint32_t>(header + 8);
  const uint32_t entry_code = Load<uint32_t>(header + 12);
  if (length > slot.size() - kHeaderBytes - kTrailerBytes) return EntryState::kMalformed;
  // One copy of payload and trailer, into the caller's buffer (its
  // capacity is reused: no allocation per entry once it has grown);
  // everything below checks the copy.
  const size_t body = Align8(length) + kTrailerBytes;
  std::vector<uint8_t>& copy = *payload;
  copy.resize(body);
  std::memcpy(copy.data(), slot.data() + kHeaderBytes, body);
  // The header may have changed while we copied: it must still be ours.
  std::atomic_thread_fence(std::memory_order_acquire);
  if (std::memcmp(header, slot.data(), kHeaderBytes) != 0) return EntryState::kTorn;
  const uint8_t* trailer = copy.data() + Align8(length);
  std::span<const uint8_t> bytes(copy.data(), length);
  if (Load<uint64_t>(trailer) != tag || Load<uint64_t>(trailer + 8) != Check(length, entry_code, bytes)) {
    return EntryState::kTorn;
  }
  copy.resize(length);
  *code = entry_code;
  return EntryState::kComplete;
}

void ClearEntry(std::span<uint8_t> slot) {
  if (slot.size() < kHeaderBytes) return;
  const uint32_t length = Load<uint32_t>(slot.data() + 8);
  Store<uint64_t>(slot.data(), 0);
  if (length <= slot.size() - kHeaderBytes - kTrailerBytes) {
    Store<uint64_t>(slot.data() + kHeaderBytes + Align8(length), 0);
  }
}

namespace {

uint64_t DescriptorCheck(uint64_t tag, const Descriptor& d) {
  uint8_t fields[24];
  Store<uint64_t>(fields, tag);
  Store<uint32_t>(fields + 8, d.offset);
  Store<uint32_t>(fields + 12, d.bytes);
  Store<uint32_t>(fields + 16, d.answer_offset);
  Store<uint32_t>(fields + 20, d.answer_bytes);
  return Check(kDescriptorBytes, 0, std::span<const uint8_t>(fields, sizeof(fields)));
}

}  // namespace

void EncodeDescriptor(std::span<uint8_t> slot, uint64_t number, const Descriptor& d) {
  uint8_t out[kDescriptorBytes];
  const uint64_t tag = number + 1;
  Store<uint64_t>(out, tag);
  Store<uint32_t>(out + 8, d.offset);
  Store<uint32_t>(out + 12, d.bytes);
  Store<uint32_t>(out + 16, d.answer_offset);
  Store<uint32_t>(out + 20, d.answer_bytes);
  Store<uint64_t>(out + 24, DescriptorCheck(tag, d));
  // The fields before the tag: a reader that sees the tag in a mapped slot
  // sees the rest (it checks all the same).
  std::memcpy(slot.data() + 8, out + 8, kDescriptorBytes - 8);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(slot.data(), out, 8);
}

EntryState CopyDescriptor(std::span<const uint8_t> slot, uint64_t number, Descriptor* d) {
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.size() < kDescriptorBytes) return EntryState::kMalformed;
  uint8_t copy[kDescriptorBytes];
  std::memcpy(copy, slot.data(), kDescriptorBytes);
  const uint64_t tag = number + 1;
  if (Load<uint64_t>(copy) != tag) return EntryState::kAbsent;
  Descriptor out;
  out.offset = Load<uint32_t>(copy + 8);
  out.bytes = Load<uint32_t>(copy + 12);
  out.answer_offset = Load<uint32_t>(copy + 16);
  out.answer_bytes = Load<uint32_t>(copy + 20);
  if (Load<uint64_t>(copy + 24) != DescriptorCheck(tag, out)) return EntryState::kTorn;
  *d = out;
  return EntryState::kComplete;
}

void ClearDescriptor(std::span<uint8_t> slot) {
  if (slot.size() >= 8) Store<uint64_t>(slot.data(), 0);
}

// ---- setup messages -------------------------------------------------------

std::vector<uint8_t> EncodeOpenRequest(const OpenRequest& r) {
  protocol::ByteWriter w(64 + r.response_rkey.size());
  w.Put<uint32_t>(r.version);
  w.Put<uint32_t>(r.geometry.slots);
  w.Put<uint32_t>(r.geometry.slot_bytes);
  if (r.version >= 2) {
    w.Put<uint32_t>(static_cast<uint32_t>(r.geometry.layout));
    w.Put<uint32_t>(r.geometry.data_bytes);
  }
  w.Put<uint64_t>(r.response_base);
  w.PutBytes(r.response_rkey);
  return w.Take();
}

Result<OpenRequest> DecodeOpenRequest(std::span<const uint8_t> bytes) {
  protocol::ByteReader in(bytes);
  OpenRequest r;
  r.version = in.Get<uint32_t>();
  r.geometry.slots = in.Get<uint32_t>();
  r.geometry.slot_bytes = in.Get<uint32_t>();
  if (r.version != 1 && r.version != 2) {
    return Status::InvalidArgument("ring open request version " + std::to_string(r.version) + " (1 and 2 are known)");
  }
  if (r.version == 2) {
    r.geometry.layout = static_cast<Layout>(in.Get<uint32_t>());
    r.geometry.data_bytes = in.Get<uint32_t>();
  }
  r.response_base = in.Get<uint64_t>();
  r.response_rkey = in.GetBytes(kMaxRkeyBytes);
  if (!in.ok() || !in.at_end()) {
    return Status::InvalidArgument("ring open request of " + std::to_string(bytes.size()) +
                                   " bytes is short, long or has an oversized response_rkey");
  }
  PULSE_RETURN_IF_ERROR(r.geometry.Validate());
  return r;
}

std::vector<uint8_t> EncodeOpenReply(const OpenReply& r) {
  protocol::ByteWriter w(64 + r.ring_rkey.size() + r.tail_rkey.size() + r.error.size());
  w.Put<uint32_t>(r.code);
  w.PutString(r.error);
  w.Put<uint32_t>(r.ring_id);
  w.Put<uint64_t>(r.ring_base);
  w.Put<uint64_t>(r.tail_address);
  w.PutBytes(r.ring_rkey);
  w.PutBytes(r.tail_rkey);
  return w.Take();
}

Result<OpenReply> DecodeOpenReply(std::span<const uint8_t> bytes) {
  protocol::ByteReader in(bytes);
  OpenReply r;
  r.code = in.Get<uint32_t>();
  r.error = in.GetString(kMaxErrorBytes);
  r.ring_id = in.Get<uint32_t>();
  r.ring_base = in.Get<uint64_t>();
  r.tail_address = in.Get<uint64_t>();
  r.ring_rkey = in.GetBytes(kMaxRkeyBytes);
  r.tail_rkey = in.GetBytes(kMaxRkeyBytes);
  if (!in.ok() || !in.at_end()) {
    return Status::InvalidArgument("ring open reply of " + std::to_string(bytes.size()) +
                                   " bytes is short, long or has an oversized field");
  }
  return r;
}

}  // namespace pulse::net::ring
