// kRpcKvGet: pulse::kv::Store's GET (src/kv/iterators/kv_get.c) as a native
// handler, the HERD-like baseline of `pulse bench kv --system rpc` (issue
// 15, seed 002 section V): the same buckets, tags and items, walked by the
// memory node's CPU, with the same state in and out.
#include "pulse/rpc.h"
#include "rpc/handlers/kv_common.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {
namespace {

using kv_handlers::KeyMatches;
using kv_handlers::TagOf;

RpcOutcome KvGet(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>*) {
  pulse_kv_state st = StateAs<pulse_kv_state>(state);
  RpcOutcome out;
  st.outcome = PULSE_KV_MISS;
  while (ptr != 0) {
    pulse_kv_node bucket;
    if (!memory.Load(ptr, &bucket)) {
      out = memory.Stopped();
      break;
    }
    bool found = false;
    for (uint64_t k = 0; k < PULSE_KV_SLOTS && !found; ++k) {
      if (TagOf(bucket, k) != st.tag) continue;
      pulse_kv_node item;
      const uint64_t item_addr = bucket.w[PULSE_KV_ITEM_WORD + k];
      if (!memory.Load(item_addr, &item)) {
        out = memory.Stopped();
        StoreState(state, st);
        return out;
      }
      if (!KeyMatches(item, st)) continue;
      for (uint64_t w = 0; w < st.item_words && w < PULSE_KV_WINDOW_WORDS; ++w) st.data[w] = item.w[w];
      st.item = item_addr;
      st.outcome = PULSE_KV_HIT;
      found = true;
    }
    if (found) break;
    ptr = bucket.w[0];
  }
  st.loads = memory.steps();
  StoreState(state, st);
  return out;
}

}  // namespace

extern const RpcHandler kRpcHandler_kv_get{kRpcKvGet, "kv_get", sizeof(pulse_kv_state), KvGet};

}  // namespace pulse::rpc
