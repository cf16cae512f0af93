// The applications' traversals as native handlers (the `rpc` and
// `rpc-wimpy` systems of `pulse bench app`): the WiredTiger-like scan and
// the BTrDB-like time-series aggregate.  Each computes exactly what the
// application's pulse iterator computes, visiting the same objects in the
// same order, and stops with its whole resume point in the state when the
// next object lives on another memory node.
#include <algorithm>

#include "pulse/rpc.h"
#include "rpc/handlers/app_states.h"
#include "rpc/handlers/tsv_step.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {
namespace {

using BTreeNode = pulse_ds_btree_node;

// From the root (or a resume point): descend to the leaf that may hold
// start, take its keys >= start and visit their value slots (summing each
// value's words), then the next leaf, until `limit` records.
RpcOutcome WtScan(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>* output) {
  WtScanState st = StateAs<WtScanState>(state);
  RpcOutcome out;
  st.limit = std::min<uint64_t>(st.limit, PULSE_WT_MAX_SCAN);
  while (st.count < st.limit) {
    if (st.at_value) {
      const uint8_t* value = memory.Read(ptr, PULSE_WT_VALUE_BYTES);
      if (value == nullptr) {
        out = memory.Stopped();
        break;
      }
      uint64_t words[PULSE_WT_VALUE_WORDS];
      std::memcpy(words, value, sizeof(words));
      uint64_t sum = 0;
      for (uint64_t w : words) sum += w;
      const uint64_t record[2] = {st.key[st.visited % PULSE_WT_LEAF_PENDING], sum};
      const auto* b = reinterpret_cast<const uint8_t*>(record);
      output->insert(output->end(), b, b + sizeof(record));
      ++st.count;
      if (++st.visited < st.pending) {
        ptr = st.slot[st.visited % PULSE_WT_LEAF_PENDING];
        continue;
      }
      st.at_value = 0;
      if (st.next_leaf == 0) break;
      ptr = st.next_leaf;
      continue;
    }
    BTreeNode n;
    if (!memory.Load(ptr, &n)) {
      out = memory.Stopped();
      break;
    }
    const uint32_t count = std::min<uint32_t>(n.count, PULSE_DS_BTREE_MAX_KEYS);
    if (!n.leaf) {  // the child that may hold start: the number of keys <= start
      ptr = n.slot[std::upper_bound(n.keys, n.keys + count, st.start) - n.keys];
      continue;
    }
    const uint64_t want = st.limit - st.count;
    uint64_t p = 0;
    for (uint32_t k = 0; k < count && p < want; ++k) {
      if (n.keys[k] < st.start) continue;
      st.key[p] = n.keys[k];
      st.slot[p] = n.slot[k];
      ++p;
    }
    st.next_leaf = n.slot[PULSE_DS_BTREE_NEXT];
    if (p != 0) {
      st.pending = p;
      st.visited = 0;
      st.at_value = 1;
      ptr = st.slot[0];
      continue;
    }
    if (st.next_leaf == 0) break;
    ptr = st.next_leaf;
  }
  StoreState(state, st);
  return out;
}

RpcOutcome TsvAggregate(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>* output) {
  TsvAggregateState st = StateAs<TsvAggregateState>(state);
  RpcOutcome out;
  while (ptr != 0) {
    pulse_tsv_node n;
    if (!memory.Load(ptr, &n)) {
      out = memory.Stopped();
      break;
    }
    if (st.flags & kTsvReturnFirstInner) {
      st.flags &= ~kTsvReturnFirstInner;
      if (!n.leaf) {
        const auto* b = reinterpret_cast<const uint8_t*>(&n);
        output->insert(output->end(), b, b + sizeof(n));
      }
    }
    ptr = TsvStep(n, &st.agg);
  }
  StoreState(state, st);
  return out;
}

}  // namespace

extern const RpcHandler kRpcHandler_wt_scan{kRpcWtScan, "wt_scan", sizeof(WtScanState), WtScan};
extern const RpcHandler kRpcHandler_tsv_aggregate{kRpcTsvAggregate, "tsv_aggregate", sizeof(TsvAggregateState),
                                                  TsvAggregate};

}  // namespace pulse::rpc
