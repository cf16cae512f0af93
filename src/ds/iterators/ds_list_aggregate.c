/* List::Aggregate: sum/min/max/count of the elements in [lo, hi], walking the
 * whole list from the head. */
#include "ds_nodes.h"

PULSE_END(ds_list_aggregate, struct pulse_ds_list_node) {
  struct pulse_ds_agg_state *st = PULSE_STATE(struct pulse_ds_agg_state);
  pulse_u64 v = cur_ptr->value;
  if (v >= st->lo && v <= st->hi) {
    st->sum += v;
    if (v < st->min) st->min = v;
    if (v > st->max) st->max = v;
    st->count += 1;
  }
  return cur_ptr->next == NULL;
}

PULSE_NEXT(ds_list_aggregate, struct pulse_ds_list_node) {
  return cur_ptr->next;
}
