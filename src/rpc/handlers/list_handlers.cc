// pulse::ds::List's traversals as native handlers: find (first node holding
// a value, and its position) and the aggregation of the values in [lo, hi].
#include <algorithm>

#include "pulse/rpc.h"
#include "rpc/handlers/rpc_states.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {
namespace {

using Node = pulse_ds_list_node;

RpcOutcome ListFind(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>*) {
  ListFindState st = StateAs<ListFindState>(state);
  RpcOutcome out;
  st.found = 0;
  while (ptr != 0) {
    Node n;
    if (!memory.Load(ptr, &n)) {
      out = memory.Stopped();
      break;
    }
    if (n.value == st.value) {
      st.found = 1;
      st.node = ptr;
      break;
    }
    ++st.index;
    ptr = n.next;
  }
  StoreState(state, st);
  return out;
}

RpcOutcome ListAggregate(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>*) {
  ListAggregateState st = StateAs<ListAggregateState>(state);
  RpcOutcome out;
  while (ptr != 0) {
    Node n;
    if (!memory.Load(ptr, &n)) {
      out = memory.Stopped();
      break;
    }
    if (n.value >= st.lo && n.value <= st.hi) {
      st.sum += n.value;
      st.min = std::min(st.min, n.value);
      st.max = std::max(st.max, n.value);
      ++st.count;
    }
    ptr = n.next;
  }
  StoreState(state, st);
  return out;
}

}  // namespace

extern const RpcHandler kRpcHandler_list_find{kRpcListFind, "list_find", sizeof(ListFindState), ListFind};
extern const RpcHandler kRpcHandler_list_aggregate{kRpcListAggregate, "list_aggregate",
                                                   sizeof(ListAggregateState), ListAggregate};

}  // namespace pulse::rpc
