/* BTree::LowerBound: the first key >= st->key and its value.  One iteration
 * per level (an unrolled scan of the node's 15 keys), then, at a leaf whose
 * keys are all smaller, one more to the next leaf, whose first key is the
 * answer. */
#include "ds_nodes.h"

PULSE_END(ds_btree_lower_bound, struct pulse_ds_btree_node) {
  struct pulse_ds_btree_lb_state *st = PULSE_STATE(struct pulse_ds_btree_lb_state);
  pulse_u64 key = st->key;
  pulse_u64 n = cur_ptr->count;
  if (!cur_ptr->leaf) {
    pulse_u64 i = 0; /* keys[j] <= key for j < i: descend into child i */
#pragma unroll
    for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k)
      if (k < n && cur_ptr->keys[k] <= key) i = k + 1;
    st->next_pos = i;
    return false;
  }
  pulse_u64 i = 0; /* keys[j] < key for j < i */
#pragma unroll
  for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k)
    if (k < n && cur_ptr->keys[k] < key) i = k + 1;
  if (i < n) {
    st->found = 1;
    st->rkey = cur_ptr->keys[i & 15];
    st->rvalue = (pulse_u64)cur_ptr->slot[i & 15];
    return true;
  }
  st->next_pos = PULSE_DS_BTREE_NEXT;
  if (cur_ptr->slot[PULSE_DS_BTREE_NEXT] == NULL) {
    st->found = 0;
    return true;
  }
  return false;
}

PULSE_NEXT(ds_btree_lower_bound, struct pulse_ds_btree_node) {
  const struct pulse_ds_btree_lb_state *st = PULSE_STATE(const struct pulse_ds_btree_lb_state);
  return cur_ptr->slot[st->next_pos & 15];
}
