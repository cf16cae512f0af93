// kRpcKvDelete: pulse::kv::Store's DELETE (src/kv/iterators/kv_delete.c) as
// a native handler: GET's walk to the item, then its slot cleared (item
// pointer, then tag); the item itself is freed by the client.  It writes:
// its client must not retransmit it (rpc.h).
#include "pulse/rpc.h"
#include "rpc/handlers/kv_common.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {
namespace {

using kv_handlers::KeyMatches;
using kv_handlers::TagOf;
using kv_handlers::TagWordWith;

RpcOutcome Delete(RpcMemory& memory, uint64_t ptr, pulse_kv_state& st) {
  st.outcome = PULSE_KV_MISS;
  pulse_kv_node bucket;
  for (uint64_t at = ptr; at != 0; at = bucket.w[0]) {
    if (!memory.Load(at, &bucket)) return memory.Stopped();
    for (uint64_t k = 0; k < PULSE_KV_SLOTS; ++k) {
      if (TagOf(bucket, k) != st.tag) continue;
      const uint64_t item_addr = bucket.w[PULSE_KV_ITEM_WORD + k];
      pulse_kv_node item;
      if (!memory.Load(item_addr, &item)) return memory.Stopped();
      if (!KeyMatches(item, st)) continue;
      if (!memory.Store(at + 8 * (PULSE_KV_ITEM_WORD + k), uint64_t{0}) ||
          !memory.Store(at + 8 * (PULSE_KV_TAG_WORD + k / 4), TagWordWith(bucket, k, 0)))
        return memory.Stopped();
      st.writes += 1;
      st.item = item_addr;
      st.outcome = PULSE_KV_HIT;
      return {};
    }
  }
  return {};
}

}  // namespace

extern const RpcHandler kRpcHandler_kv_delete{kRpcKvDelete, "kv_delete", sizeof(pulse_kv_state),
                                   kv_handlers::OnKvState<Delete>};

}  // namespace pulse::rpc
