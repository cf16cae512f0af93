/* The running sum/min/max/count of an offloaded range aggregate, shared by
 * the iterators that scan a node's values into it (the ds B+tree's leaves,
 * the BTrDB tree's leaves and per-child aggregates).  C only (BPF): an
 * iterator keeps the accumulator in locals for the node and stores it back
 * into its scratch pad once, where its state has the four fields in this
 * order (sum, min, max, count). */
#ifndef PULSE_SRC_DS_ITERATORS_DS_AGGREGATE_H_
#define PULSE_SRC_DS_ITERATORS_DS_AGGREGATE_H_

#include <pulse/iterator.h>

struct pulse_ds_agg_acc {
  pulse_u64 sum;
  pulse_u64 min;
  pulse_u64 max;
  pulse_u64 count;
};

/* The accumulator stored in `state` from its field `sum` on. */
#define PULSE_DS_AGG_IN(state) ((struct pulse_ds_agg_acc *)&(state)->sum)

/* Folds `count` values whose sum/min/max are given into *acc. */
PULSE_INLINE void pulse_ds_agg_fold(struct pulse_ds_agg_acc *acc, pulse_u64 sum, pulse_u64 mn,
                                    pulse_u64 mx, pulse_u64 count) {
  acc->sum += sum;
  acc->min = mn < acc->min ? mn : acc->min;
  acc->max = mx > acc->max ? mx : acc->max;
  acc->count += count;
}

/* Folds the one value v into *acc. */
PULSE_INLINE void pulse_ds_agg_add(struct pulse_ds_agg_acc *acc, pulse_u64 v) {
  pulse_ds_agg_fold(acc, v, v, v, 1);
}

#endif /* PULSE_SRC_DS_ITERATORS_DS_AGGREGATE_H_ */
