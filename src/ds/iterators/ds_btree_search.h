/* The in-node searches of the B+tree iterators that write (ds_btree_insert,
 * and resp_lookup of `pulse kv serve`): an unrolled scan of a node's 15
 * keys (src/ds/iterators/ds_nodes.h has the layout). */
#ifndef PULSE_SRC_DS_ITERATORS_DS_BTREE_SEARCH_H_
#define PULSE_SRC_DS_ITERATORS_DS_BTREE_SEARCH_H_

#include "ds_nodes.h"

/* The child of an inner node that may hold key: the number of keys <= key. */
PULSE_INLINE pulse_u64 pulse_ds_btree_child(const struct pulse_ds_btree_node *n, pulse_u64 key) {
  pulse_u64 count = n->count;
  pulse_u64 i = 0;
#pragma unroll
  for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k)
    if (k < count && n->keys[k] <= key) i = k + 1;
  return i;
}

/* Where key is or would go in a leaf: the number of keys < key. */
PULSE_INLINE pulse_u64 pulse_ds_btree_position(const struct pulse_ds_btree_node *n, pulse_u64 key) {
  pulse_u64 count = n->count;
  pulse_u64 i = 0;
#pragma unroll
  for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k)
    if (k < count && n->keys[k] < key) i = k + 1;
  return i;
}

#endif
