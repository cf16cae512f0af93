// kRpcKvGet: pulse::kv::Store's GET (src/kv/iterators/kv_get.c) as a native
// handler, the HERD-like baseline of `pulse bench kv --system rpc` (issue
// 15, seed 002 section V): the same buckets, tags and items, walked by the
// memory node's CPU, with the same state in and out.
#include "pulse/rpc.h"
#include "rpc/handlers/kv_common.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {

RpcOutcome kv_handlers::KvGetWalk(RpcMemory& memory, uint64_t ptr, pulse_kv_state& st) {
  RpcOutcome out;
  st.outcome = PULSE_KV_MISS;
  while (ptr != 0) {
    pulse_kv_node bucket;
    if (!memory.Load(ptr, &bucket)) return memory.Stopped();
    for (uint64_t k = 0; k < PULSE_KV_SLOTS; ++k) {
      if (TagOf(bucket, k) != st.tag) continue;
      pulse_kv_node item;
      const uint64_t item_addr = bucket.w[PULSE_KV_ITEM_WORD + k];
      if (!memory.Load(item_addr, &item)) return memory.Stopped();
      if (!KeyMatches(item, st)) continue;
      for (uint64_t w = 0; w < st.item_words && w < PULSE_KV_WINDOW_WORDS; ++w) st.data[w] = item.w[w];
      st.item = item_addr;
      st.outcome = PULSE_KV_HIT;
      return out;
    }
    ptr = bucket.w[0];
  }
  return out;
}

namespace {

RpcOutcome KvGet(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>*) {
  pulse_kv_state st = StateAs<pulse_kv_state>(state);
  const RpcOutcome out = kv_handlers::KvGetWalk(memory, ptr, st);
  st.loads = memory.steps();
  StoreState(state, st);
  return out;
}

}  // namespace

extern const RpcHandler kRpcHandler_kv_get{kRpcKvGet, "kv_get", sizeof(pulse_kv_state), KvGet};

}  // namespace pulse::rpc
