// The states of the applications' handlers (src/rpc/handlers/app_handlers.cc),
// shared with the typed calls of include/pulse/rpc_apps.h.  They are laid
// out over the applications' node layouts (src/apps/*/iterators/), the one
// place the RPC layer reads the layer below it, the applications.
#pragma once

#include <cstdint>

#include "apps/btrdb/iterators/tsv_nodes.h"
#include "apps/wiredtiger/iterators/wt_nodes.h"
#include "ds/iterators/ds_nodes.h"  // WiredTiger's tree is the pulse::ds B+tree

namespace pulse::rpc {

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
