// One step of apps::TsvTree's aggregate over a node, in C++: what the pulse
// iterator (src/apps/btrdb/iterators/tsv_aggregate.c) does in one
// iteration.  Shared by the kRpcTsvAggregate handler (memory node) and the
// cache-rpc system, which runs the cached upper tree at the CPU node.
#pragma once

#include <algorithm>
#include <cstdint>

#include "apps/btrdb/iterators/tsv_nodes.h"

namespace pulse::rpc {

// Adds node n's part of the window [st->lo, st->hi] to st and returns the
// next node to visit, 0 when the query is done.  Children the window covers
// fully contribute their stored aggregate; the one at the left edge is
// descended, the one at the right edge is kept in st->pending until the
// left edge's leaf is done.
inline uint64_t TsvStep(const pulse_tsv_node& n, pulse_tsv_agg_state* st) {
  const uint64_t lo = st->lo, hi = st->hi, start = n.start;
  if (n.leaf) {
    const uint64_t count = std::min<uint64_t>(n.count, PULSE_TSV_LEAF_VALUES);
    const uint64_t a = lo > start ? lo - start : 0;
    const uint64_t b = std::min<uint64_t>(hi >= start ? hi - start + 1 : 0, count);
    for (uint64_t k = a; k < b; ++k) {
      const uint64_t v = n.u.value[k];
      st->sum += v;
      st->min = std::min(st->min, v);
      st->max = std::max(st->max, v);
      ++st->count;
    }
  } else {
    const uint64_t span = n.span, count = std::min<uint64_t>(n.count, PULSE_TSV_FANOUT);
    uint64_t left = 0, right = 0;
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t cs = start + k * span, ce = cs + span - 1;
      if (ce < lo || cs > hi) continue;
      const pulse_tsv_child& c = n.u.child[k];
      if (cs >= lo && ce <= hi) {
        st->sum += c.sum;
        st->min = std::min<uint64_t>(st->min, c.min);
        st->max = std::max<uint64_t>(st->max, c.max);
        st->count += c.count;
      } else if (cs < lo) {
        left = c.addr;
      } else {
        right = c.addr;
      }
    }
    if (left != 0) {
      if (right != 0) st->pending = right;
      return left;
    }
    if (right != 0) return right;
  }
  const uint64_t next = st->pending;
  st->pending = 0;
  return next;
}

}  // namespace pulse::rpc
