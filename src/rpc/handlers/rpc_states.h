// The states (argument and answer) of the pulse::ds handlers, shared by the
// handlers and the typed calls of include/pulse/rpc_ds.h.  Where the pulse
// iterator's scratch pad already says everything a resumed call needs, the
// state is that struct (src/ds/iterators/ds_nodes.h).
#pragma once

#include <cstdint>

#include "apps/btrdb/iterators/tsv_nodes.h"
#include "apps/wiredtiger/iterators/wt_nodes.h"
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

// ---- Applications (src/rpc/handlers/app_handlers.cc) -----------------------

// kRpcWtScan: apps::WiredTiger's scan, as apps::OffloadedScan answers it:
// the first `limit` (1..128) records with keys >= start, each appended to
// the output as (key, checksum of its value) uint64 pairs.  start: the root.
// The rest is the resume point: the leaf's qualifying keys and value slots
// still to visit (a value slot may live on another memory node).
struct WtScanState {
  uint64_t start, limit;  // in
  uint64_t count;         // out: records emitted by all legs (in: 0)
  uint64_t at_value;      // 1 while visiting the value slots of a leaf
  uint64_t next_leaf;
  uint64_t pending, visited;
  uint64_t key[PULSE_WT_LEAF_PENDING];
  uint64_t slot[PULSE_WT_LEAF_PENDING];
};

// kRpcTsvAggregate: apps::TsvTree::Aggregate with the per-child aggregates,
// as the pulse iterator computes it (agg: pulse_tsv_agg_state, its next_ptr
// unused).  With kTsvReturnFirstInner the handler appends the first node it
// reads to the output when that is an inner node (256 bytes): the
// `cache-rpc` system caches the upper tree that way.
inline constexpr uint64_t kTsvReturnFirstInner = 1;
struct TsvAggregateState {
  pulse_tsv_agg_state agg;
  uint64_t flags;
};

}  // namespace pulse::rpc
