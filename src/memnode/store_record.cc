#include "memnode/store_record.h"

#include <algorithm>
#include <cstring>

namespace pulse::memnode {

struct StoreRecord::Header {
  uint64_t magic;
  uint64_t version;
  uint64_t slots;
  uint64_t node;
};

struct StoreRecord::Slot {
  uint32_t state;  // kEmpty, kBegun, kFinished: cleared first, written last
  uint32_t iterations;
  uint64_t seq;
  uint64_t request_id;
  uint64_t program_hash;
  uint64_t cur_ptr;
  uint32_t response_bytes;  // 0: none kept
  uint32_t reserved;
  uint8_t response[kSlotBytes - 48];
};

StoreRecord::Slot* StoreRecord::SlotAt(uint32_t index) const {
  static_assert(sizeof(Slot) == kSlotBytes);
  return reinterpret_cast<Slot*>(area_ + sizeof(Header) + size_t{index} * sizeof(Slot));
}


namespace {
constexpr uint64_t kMagic = 0x64726f6365727370;  // "psrecord"
constexpr uint64_t kVersion = 1;
constexpr uint32_t kEmpty = 0, kBegun = 1, kFinished = 2;

uint32_t LoadState(const uint32_t* state) { return __atomic_load_n(state, __ATOMIC_ACQUIRE); }
void StoreState(uint32_t* state, uint32_t v) { __atomic_store_n(state, v, __ATOMIC_RELEASE); }
}  // namespace

size_t StoreRecord::BytesFor(uint32_t slots) { return sizeof(Header) + size_t{slots} * sizeof(Slot); }

StoreRecord::StoreRecord(uint8_t* area, size_t bytes, uint32_t slots, uint32_t node)
    : area_(area), bytes_(bytes), slots_(slots), node_(node) {}


void StoreRecord::Format() {
  if (bytes_ < BytesFor(slots_) || slots_ == 0) return;
  std::memset(area_, 0, BytesFor(slots_));
  const Header h{kMagic, kVersion, slots_, node_};
  std::memcpy(area_, &h, sizeof h);
  recovered_.clear();
  open_.clear();
  next_seq_ = 1;
}

bool StoreRecord::Recover() {
  if (bytes_ < BytesFor(slots_) || slots_ == 0) return false;
  Header h;
  std::memcpy(&h, area_, sizeof h);
  if (h.magic != kMagic || h.version != kVersion || h.slots != slots_ || h.node != node_) return false;
  recovered_.clear();
  for (uint32_t i = 0; i < slots_; ++i) {
    const Slot* s = SlotAt(i);
    const uint32_t state = LoadState(&s->state);
    if (state == kEmpty) continue;
    next_seq_ = std::max(next_seq_, s->seq + 1);
    Outcome o;
    o.finished = state == kFinished;
    if (o.finished && s->response_bytes > 0 && s->response_bytes <= sizeof(s->response))
      o.response.assign(s->response, s->response + s->response_bytes);
    recovered_[Key{s->request_id, s->iterations, s->program_hash, s->cur_ptr}] = std::move(o);
  }
  return true;
}

void StoreRecord::Begin(const TraversalMessage& request, uint64_t program_hash) {
  if (slots_ == 0 || bytes_ < BytesFor(slots_)) return;
  const uint64_t seq = next_seq_++;
  const uint32_t index = static_cast<uint32_t>(seq % slots_);
  Slot* s = SlotAt(index);
  StoreState(&s->state, kEmpty);
  // A running visit whose slot is taken over is no longer tracked.
  for (auto it = open_.begin(); it != open_.end(); ++it)
    if (it->second == index) {
      open_.erase(it);
      break;
    }
  s->seq = seq;
  s->request_id = request.request_id;
  s->iterations = request.iterations;
  s->program_hash = program_hash;
  s->cur_ptr = request.cur_ptr;
  s->response_bytes = 0;
  StoreState(&s->state, kBegun);
  open_[{request.request_id, request.iterations}] = index;
}

void StoreRecord::Finish(uint64_t request_id, uint32_t iterations, const TraversalMessage& response) {
  auto it = open_.find({request_id, iterations});
  if (it == open_.end()) return;
  Slot* s = SlotAt(it->second);
  open_.erase(it);
  const std::vector<uint8_t> bytes = EncodeMessage(response);
  // Begun -> finished without a response first: a crash while the response
  // is copied must not leave a half-written one marked finished.
  StoreState(&s->state, kBegun);
  if (bytes.size() <= sizeof(s->response)) {
    std::memcpy(s->response, bytes.data(), bytes.size());
    s->response_bytes = static_cast<uint32_t>(bytes.size());
  } else {
    s->response_bytes = 0;
  }
  StoreState(&s->state, kFinished);
}

StoreRecord::Earlier StoreRecord::Lookup(const TraversalMessage& request, uint64_t program_hash,
                                         TraversalMessage* response) const {
  auto it = recovered_.find(Key{request.request_id, request.iterations, program_hash, request.cur_ptr});
  if (it == recovered_.end()) return Earlier::kNone;
  if (!it->second.finished || it->second.response.empty()) return Earlier::kUnknown;
  auto decoded = DecodeMessage(it->second.response, 1 << 20);
  if (!decoded.ok()) return Earlier::kUnknown;
  *response = std::move(*decoded);
  return Earlier::kAnswered;
}

}  // namespace pulse::memnode
