/* Range aggregation (sum/min/max/count of values with lo <= ts <= hi) over a
 * chain of time-series leaves, in the scratch pad.  cur_ptr starts at the
 * first leaf that may hold lo. */
#include "nodes.h"

PULSE_END(range_aggregate, struct ts_leaf) {
  struct agg_state *st = PULSE_STATE(struct agg_state);
  pulse_s64 sum = st->sum, mn = st->min, mx = st->max;
  pulse_u64 count = st->count;
  bool past = false;
#pragma unroll
  for (int k = 0; k < TS_POINTS; ++k) {
    if (k < cur_ptr->count) {
      const struct ts_point *p = &cur_ptr->points[k];
      if (p->ts > st->hi) {
        past = true;
      } else if (p->ts >= st->lo) {
        sum += p->value;
        mn = p->value < mn ? p->value : mn;
        mx = p->value > mx ? p->value : mx;
        count += 1;
      }
    }
  }
  st->sum = sum;
  st->min = mn;
  st->max = mx;
  st->count = count;
  return past || cur_ptr->next == NULL;
}

PULSE_NEXT(range_aggregate, struct ts_leaf) {
  return cur_ptr->next;
}
