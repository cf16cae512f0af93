// The states (argument and answer) of the pulse::ds handlers, shared by the
// handlers and the typed calls of include/pulse/rpc_ds.h.  The applications'
// handlers have theirs in app_states.h.  Where the pulse
// iterator's scratch pad already says everything a resumed call needs, the
// state is that struct (src/ds/iterators/ds_nodes.h).
#pragma once

#include <cstdint>

#include "ds/iterators/ds_nodes.h"

namespace pulse::rpc {

// kRpcUmapFind.  start: the bucket slot (kUmapStartIsSlot) or a chain node.
inline constexpr uint64_t kUmapStartIsSlot = 1;
struct UmapFindState {
  uint64_t key;    // in
  uint64_t flags;  // in: kUmapStartIsSlot; cleared once the slot is read
  uint64_t found;  // out: 1 or 0
  uint64_t value;  // out
  uint64_t node;   // out: far address of the node holding key
};

// kRpcBTreeLowerBound: pulse_ds_btree_lb_state (next_pos unused).
using BTreeLowerBoundState = pulse_ds_btree_lb_state;
// kRpcBTreeAggregate: pulse_ds_btree_agg_state (next_pos unused).
using BTreeAggregateState = pulse_ds_btree_agg_state;
// kRpcBTreeScan: entries with keys in [lo, hi], at most `limit`, appended to
// the output as (key, value) pairs of uint64.
struct BTreeScanState {
  uint64_t lo, hi, limit;
  uint64_t emitted;  // out (in: 0)
};
// kRpcListFind: pulse_ds_list_find_state.  kRpcListAggregate: pulse_ds_agg_state.
using ListFindState = pulse_ds_list_find_state;
using ListAggregateState = pulse_ds_agg_state;

}  // namespace pulse::rpc
