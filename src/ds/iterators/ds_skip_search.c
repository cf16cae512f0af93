/* SkipList::Find / LowerBound / UpperBound: the descent from the head to the
 * first key >= st->key (> with strict).  init() (CPU node) sets cur_ptr to
 * the head and the top level. */
#include "ds_skip_descent.h"

PULSE_END(ds_skip_search, struct pulse_ds_skip_node) {
  struct pulse_ds_skip_search_state *st = PULSE_STATE(struct pulse_ds_skip_search_state);
  return pulse_ds_skip_step(cur_ptr, cur_addr, st) != PULSE_DS_SKIP_CONTINUE;
}

PULSE_NEXT(ds_skip_search, struct pulse_ds_skip_node) {
  return PULSE_ADDR(PULSE_STATE(struct pulse_ds_skip_search_state)->next);
}
