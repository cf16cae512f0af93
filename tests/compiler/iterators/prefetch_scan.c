/* A scan that hints the nodes it will visit: at each B-tree node, prefetch
 * every child whose key is >= the scan's start, count and sum those keys
 * (values live across the hints, so clang keeps them in r6..r9 or on the
 * stack around each call), and descend to the first such child.  State: in
 * start at 0; out count at 8, sum at 16, the last hinted child at 24. */
#include "nodes.h"

struct prefetch_scan_state {
  pulse_u64 start;
  pulse_u64 count;
  pulse_u64 sum;
  pulse_u64 last_hint;
};

PULSE_END(prefetch_scan, struct btree_node) {
  struct prefetch_scan_state *st = PULSE_STATE(struct prefetch_scan_state);
  pulse_u64 n = cur_ptr->count;
  pulse_u64 count = st->count, sum = st->sum, first = 0, last = st->last_hint;
#pragma unroll
  for (int k = 0; k < BTREE_MAX_KEYS; ++k) {
    if (k < n && cur_ptr->keys[k] >= st->start) {
      PULSE_PREFETCH(cur_ptr->child[k]);
      count += 1;
      sum += cur_ptr->keys[k] ^ (pulse_u64)k;
      last = (pulse_u64)cur_ptr->child[k];
      if (first == 0) first = (pulse_u64)cur_ptr->child[k];
    }
  }
  st->count = count;
  st->sum = sum;
  st->last_hint = last;
  if (cur_ptr->leaf || first == 0) return true;
  st->start = first; /* next() reads it: the child to visit */
  return false;
}

PULSE_NEXT(prefetch_scan, struct btree_node) {
  return PULSE_ADDR(PULSE_STATE(struct prefetch_scan_state)->start);
}
