// kRpcUmapFind: pulse::ds::UnorderedMap's chain walk as a native handler.
// From the bucket slot (the memory node reads the chain's head itself) or
// from a chain node.
#include "pulse/rpc.h"
#include "rpc/handlers/rpc_states.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {
namespace {

RpcOutcome UmapFind(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>*) {
  UmapFindState st = StateAs<UmapFindState>(state);
  RpcOutcome out;
  if (st.flags & kUmapStartIsSlot) {
    if (!memory.Load(ptr, &ptr)) return memory.Stopped();
    st.flags &= ~kUmapStartIsSlot;
  }
  st.found = 0;
  while (ptr != 0) {
    pulse_ds_umap_node n;
    if (!memory.Load(ptr, &n)) {
      out = memory.Stopped();
      break;
    }
    if (n.key == st.key) {
      st.found = 1;
      st.value = n.value;
      st.node = ptr;
      break;
    }
    ptr = n.next;
  }
  StoreState(state, st);
  return out;
}

}  // namespace

extern const RpcHandler kRpcHandler_umap_find{kRpcUmapFind, "umap_find", sizeof(UmapFindState), UmapFind};

}  // namespace pulse::rpc
