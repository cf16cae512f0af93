/* BTree::Aggregate: sum/min/max/count of the values whose keys are in
 * [lo, hi]: descends to the leaf that may hold lo, then walks the leaf chain
 * until a key > hi or the last leaf.  Each leaf raises lo past the last key
 * it counted: a borrow that failed part-way shows the moved key in two
 * neighbouring leaves (src/ds/btree.cc), and it must count once. */
#include "ds_aggregate.h"
#include "ds_nodes.h"

PULSE_END(ds_btree_aggregate, struct pulse_ds_btree_node) {
  struct pulse_ds_btree_agg_state *st = PULSE_STATE(struct pulse_ds_btree_agg_state);
  pulse_u64 n = cur_ptr->count;
  if (!cur_ptr->leaf) {
    pulse_u64 lo = st->lo;
    pulse_u64 i = 0;
#pragma unroll
    for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k)
      if (k < n && cur_ptr->keys[k] <= lo) i = k + 1;
    st->next_pos = i;
    return false;
  }
  pulse_u64 sum = st->sum, mn = st->min, mx = st->max, count = st->count;
  pulse_u64 lo = st->lo, hi = st->hi, next_lo = lo;
  bool past = false;
#pragma unroll
  for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k) {
    if (k < n) {
      pulse_u64 key = cur_ptr->keys[k];
      if (key > hi) {
        past = true;
      } else if (key >= lo) {
        pulse_ds_agg_add(&sum, &mn, &mx, &count, (pulse_u64)cur_ptr->slot[k]);
        next_lo = key + 1;
        if (key == hi) past = true; /* also stops key + 1 wrapping at UINT64_MAX */
      }
    }
  }
  PULSE_DS_AGG_STORE(st, sum, mn, mx, count);
  st->lo = next_lo;
  st->next_pos = PULSE_DS_BTREE_NEXT;
  return past || cur_ptr->slot[PULSE_DS_BTREE_NEXT] == NULL;
}

PULSE_NEXT(ds_btree_aggregate, struct pulse_ds_btree_node) {
  const struct pulse_ds_btree_agg_state *st = PULSE_STATE(const struct pulse_ds_btree_agg_state);
  return cur_ptr->slot[st->next_pos & 15];
}
