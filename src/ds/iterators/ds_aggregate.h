/* The running sum/min/max/count of an offloaded range aggregate, shared by
 * the iterators that fold a node's values into it (the ds B+tree's leaves,
 * the BTrDB tree's leaves and per-child aggregates).  C only (BPF).  An
 * iterator keeps the four in scalar locals for the node (a local struct
 * would be spilled to the stack: a longer program) and stores them back
 * into its scratch pad once with PULSE_DS_AGG_STORE. */
#ifndef PULSE_SRC_DS_ITERATORS_DS_AGGREGATE_H_
#define PULSE_SRC_DS_ITERATORS_DS_AGGREGATE_H_

#include <pulse/iterator.h>

/* Folds `add_count` values whose sum, min and max are given into the
 * running *sum, *min, *max and *count. */
PULSE_INLINE void pulse_ds_agg_fold(pulse_u64 *sum, pulse_u64 *min, pulse_u64 *max,
                                    pulse_u64 *count, pulse_u64 add_sum, pulse_u64 add_min,
                                    pulse_u64 add_max, pulse_u64 add_count) {
  *sum += add_sum;
  *min = add_min < *min ? add_min : *min;
  *max = add_max > *max ? add_max : *max;
  *count += add_count;
}

/* Folds the one value v into the running *sum, *min, *max and *count. */
PULSE_INLINE void pulse_ds_agg_add(pulse_u64 *sum, pulse_u64 *min, pulse_u64 *max,
                                   pulse_u64 *count, pulse_u64 v) {
  pulse_ds_agg_fold(sum, min, max, count, v, v, v, 1);
}

/* Stores the running values into `state` (fields sum, min, max, count). */
#define PULSE_DS_AGG_STORE(state, sum_, min_, max_, count_) \
  do {                                                      \
    (state)->sum = (sum_);                                  \
    (state)->min = (min_);                                  \
    (state)->max = (max_);                                  \
    (state)->count = (count_);                              \
  } while (0)

#endif /* PULSE_SRC_DS_ITERATORS_DS_AGGREGATE_H_ */
