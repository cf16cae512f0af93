// kRpcKvPut: pulse::kv::Store's PUT (src/kv/iterators/kv_put.c) as a native
// handler, for `pulse bench kv --system rpc --mix 50/50` (issue 15, seed 002
// section V).  The same protocol and outcomes as the program: the key's
// chain is walked, an item with the key is overwritten in place; a new key
// takes the last pre-allocated item of the state's region table and the
// first free slot seen (or the spare bucket, linked at the chain's end);
// without a region (or a spare bucket when one is needed) nothing is
// written and the outcome says what is missing.  The node's CPU runs it to
// completion, so the free slot needs no second look (the program's phase 2).
// It writes: its client must not retransmit it (rpc.h).
#include "pulse/rpc.h"
#include "rpc/handlers/kv_common.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {
namespace {

using kv_handlers::KeyMatches;
using kv_handlers::TagOf;
using kv_handlers::TagWordWith;

// Writes the state's item image to `to`; false if it may not be written.
bool WriteItem(RpcMemory& memory, uint64_t to, pulse_kv_state& st) {
  const uint64_t words = st.item_words < PULSE_KV_WINDOW_WORDS ? st.item_words : PULSE_KV_WINDOW_WORDS;
  uint8_t* p = memory.Write(to, 8 * words);
  if (p == nullptr) return false;
  std::memcpy(p, st.data, 8 * words);
  st.writes += 1;
  return true;
}

// The last pre-allocated item of the region table (ALLOC's protocol), or 0
// with outcome NEED_REGION.
uint64_t TakeRegion(pulse_kv_state& st) {
  if (st.region_count == 0) {
    st.outcome = PULSE_KV_NEED_REGION;
    return 0;
  }
  st.region_count -= 1;
  return st.regions[st.region_count & (PULSE_KV_MAX_REGIONS - 1)];
}

RpcOutcome Put(RpcMemory& memory, uint64_t ptr, pulse_kv_state& st) {
  uint64_t free_bucket = 0, free_slot = 0;  // slot + 1
  uint64_t last = 0;
  pulse_kv_node bucket;
  for (uint64_t at = ptr; at != 0; at = bucket.w[0]) {
    if (!memory.Load(at, &bucket)) return memory.Stopped();
    last = at;
    for (uint64_t k = 0; k < PULSE_KV_SLOTS; ++k) {
      if (TagOf(bucket, k) == 0) {
        if (free_slot == 0) {
          free_bucket = at;
          free_slot = k + 1;
        }
        continue;
      }
      if (TagOf(bucket, k) != st.tag) continue;
      const uint64_t item_addr = bucket.w[PULSE_KV_ITEM_WORD + k];
      pulse_kv_node item;
      if (!memory.Load(item_addr, &item)) return memory.Stopped();
      if (!KeyMatches(item, st)) continue;
      if (!WriteItem(memory, item_addr, st)) return memory.Stopped();
      st.item = item_addr;
      st.outcome = PULSE_KV_UPDATED;
      return {};
    }
  }
  if (free_slot != 0) {
    const uint64_t item = TakeRegion(st);
    if (item == 0) return {};
    const uint64_t k = free_slot - 1;
    pulse_kv_node b;
    if (!memory.Load(free_bucket, &b) || !WriteItem(memory, item, st) ||
        !memory.Store(free_bucket + 8 * (PULSE_KV_ITEM_WORD + k), item) ||
        !memory.Store(free_bucket + 8 * (PULSE_KV_TAG_WORD + k / 4), TagWordWith(b, k, st.tag)))  // published last
      return memory.Stopped();
    st.writes += 1;
    st.item = item;
    st.outcome = PULSE_KV_INSERTED;
    return {};
  }
  if (st.spare_bucket == 0) {
    st.outcome = PULSE_KV_NEED_BUCKET;
    return {};
  }
  const uint64_t item = TakeRegion(st);
  if (item == 0) return {};
  if (!WriteItem(memory, item, st) || !memory.Store(st.spare_bucket + 8 * PULSE_KV_ITEM_WORD, item) ||
      !memory.Store(st.spare_bucket + 8 * PULSE_KV_TAG_WORD, st.tag) ||
      !memory.Store(last, st.spare_bucket))  // linked last
    return memory.Stopped();
  st.writes += 2;
  st.item = item;
  st.outcome = PULSE_KV_INSERTED_OVERFLOW;
  return {};
}

}  // namespace

extern const RpcHandler kRpcHandler_kv_put{kRpcKvPut, "kv_put", sizeof(pulse_kv_state),
                                   kv_handlers::OnKvState<Put>};

}  // namespace pulse::rpc
