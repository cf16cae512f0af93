/* SkipList::AggregateRange: sum/min/max/count of the values whose keys are
 * in [lo, hi]: the descent to the first key >= lo, then a walk along level 0
 * until a key > hi or the end. */
#include "ds_skip_descent.h"

PULSE_END(ds_skip_aggregate, struct pulse_ds_skip_node) {
  struct pulse_ds_skip_agg_state *st = PULSE_STATE(struct pulse_ds_skip_agg_state);
  if (!st->walking) {
    int r = pulse_ds_skip_step(cur_ptr, cur_addr, &st->search);
    if (r == PULSE_DS_SKIP_CONTINUE) return false;
    if (r == PULSE_DS_SKIP_NONE) return true;
    st->walking = 1;
  }
  if (cur_ptr->key > st->agg.hi) return true;
  pulse_u64 v = cur_ptr->value;
  st->agg.sum += v;
  if (v < st->agg.min) st->agg.min = v;
  if (v > st->agg.max) st->agg.max = v;
  st->agg.count += 1;
  st->search.next = (pulse_u64)cur_ptr->next[0];
  return cur_ptr->next[0] == NULL;
}

PULSE_NEXT(ds_skip_aggregate, struct pulse_ds_skip_node) {
  return PULSE_ADDR(PULSE_STATE(struct pulse_ds_skip_agg_state)->search.next);
}
