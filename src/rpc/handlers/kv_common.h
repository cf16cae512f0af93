// What the native KV handlers (kv_get.cc, kv_put.cc, kv_delete.cc) share:
// the bucket and item layout of src/kv/iterators/kv_layout.h read in C++.
#pragma once

#include <cstdint>

#include "kv/iterators/kv_layout.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc::kv_handlers {

// The tag of slot k of bucket b (0: the slot is empty).
inline uint64_t TagOf(const pulse_kv_node& b, uint64_t k) {
  return (b.w[PULSE_KV_TAG_WORD + k / 4] >> ((k % 4) * 16)) & 0xffff;
}

// Bucket b's tag word holding slot k, with slot k's tag replaced by `tag`.
inline uint64_t TagWordWith(const pulse_kv_node& b, uint64_t k, uint64_t tag) {
  return (b.w[PULSE_KV_TAG_WORD + k / 4] & ~(uint64_t{0xffff} << ((k % 4) * 16))) | (tag << ((k % 4) * 16));
}

// Whether `item` holds the key of `st` (length and key words).
inline bool KeyMatches(const pulse_kv_node& item, const pulse_kv_state& st) {
  if ((item.w[0] & 0xffff) != (st.data[0] & 0xffff)) return false;
  for (uint64_t k = 0; k < st.key_words && k < PULSE_KV_MAX_KEY_WORDS; ++k)
    if (item.w[1 + k] != st.data[1 + k]) return false;
  return true;
}

// kv::Store's GET walk from bucket `ptr` (kv_get.cc): on a hit, st.data
// holds the item, st.item its address and st.outcome PULSE_KV_HIT; else
// PULSE_KV_MISS.  A stop (another node's bucket or item, a fault) is
// returned as memory.Stopped(); st is then as the walk left it.
RpcOutcome KvGetWalk(RpcMemory& memory, uint64_t ptr, pulse_kv_state& st);

// A handler (RpcHandlerFn) from an operation on the KV state: the state
// read, `op` run, the objects read added to its `loads`, the state stored.
template <RpcOutcome (*op)(RpcMemory&, uint64_t, pulse_kv_state&)>
RpcOutcome OnKvState(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>*) {
  pulse_kv_state st = StateAs<pulse_kv_state>(state);
  const RpcOutcome out = op(memory, ptr, st);
  st.loads += memory.steps();
  StoreState(state, st);
  return out;
}

}  // namespace pulse::rpc::kv_handlers
