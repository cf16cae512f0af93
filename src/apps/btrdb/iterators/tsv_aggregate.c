/* TsvTree::Aggregate: sum/min/max/count of the readings with ticks in
 * [lo, hi].  At an inner node, children the window covers fully contribute
 * their stored aggregates; a child holding the window's left edge is
 * descended, and one holding its right edge (only at the node where the two
 * edges part) is remembered in `pending` and descended after the left edge's
 * leaf.  So a query visits at most two root-to-leaf paths, whatever its
 * window. */
#include "ds_aggregate.h"
#include "tsv_nodes.h"

PULSE_END(tsv_aggregate, struct pulse_tsv_node) {
  struct pulse_tsv_agg_state *st = PULSE_STATE(struct pulse_tsv_agg_state);
  pulse_u64 lo = st->lo, hi = st->hi;
  pulse_u64 sum = st->sum, mn = st->min, mx = st->max, count = st->count;
  pulse_u64 start = cur_ptr->start;
  pulse_u64 n = cur_ptr->count;
  if (cur_ptr->leaf) {
    /* readings [a, b) of this leaf lie in the window */
    pulse_u64 a = lo > start ? lo - start : 0;
    pulse_u64 b = hi >= start ? hi - start + 1 : 0;
    b = b < n ? b : n;
#pragma unroll
    for (int k = 0; k < PULSE_TSV_LEAF_VALUES; ++k) {
      if (k >= a && k < b) pulse_ds_agg_add(&sum, &mn, &mx, &count, cur_ptr->u.value[k]);
    }
    PULSE_DS_AGG_STORE(st, sum, mn, mx, count);
    if (st->pending == 0) return true;
    st->next_ptr = st->pending;
    st->pending = 0;
    return false;
  }
  pulse_u64 span = cur_ptr->span;
  pulse_u64 left = 0, right = 0;
#pragma unroll
  for (int k = 0; k < PULSE_TSV_FANOUT; ++k) {
    pulse_u64 cs = start + k * span;
    pulse_u64 ce = cs + span - 1;
    if (k < n && ce >= lo && cs <= hi) {
      if (cs >= lo && ce <= hi) {
        pulse_ds_agg_fold(&sum, &mn, &mx, &count, cur_ptr->u.child[k].sum, cur_ptr->u.child[k].min,
                          cur_ptr->u.child[k].max, cur_ptr->u.child[k].count);
      } else if (cs < lo) {
        left = cur_ptr->u.child[k].addr;
      } else {
        right = cur_ptr->u.child[k].addr;
      }
    }
  }
  PULSE_DS_AGG_STORE(st, sum, mn, mx, count);
  if (left != 0) {
    if (right != 0) st->pending = right;
    st->next_ptr = left;
    return false;
  }
  if (right != 0) {
    st->next_ptr = right;
    return false;
  }
  if (st->pending == 0) return true;
  st->next_ptr = st->pending;
  st->pending = 0;
  return false;
}

PULSE_NEXT(tsv_aggregate, struct pulse_tsv_node) {
  const struct pulse_tsv_agg_state *st = PULSE_STATE(const struct pulse_tsv_agg_state);
  return PULSE_ADDR(st->next_ptr);
}
