/* B-tree lower_bound: the first key >= st->key.  One iteration per level:
 * end() searches the node (an unrolled scan over its 15 keys), remembers the
 * best candidate, and stops at an exact match or a leaf; next() descends
 * into child[i], a register-indexed access to the window. */
#include "nodes.h"

PULSE_INLINE pulse_u64 lower_index(const struct btree_node *n, pulse_u64 key) {
  pulse_u64 i = 0;
#pragma unroll
  for (int k = 0; k < BTREE_MAX_KEYS; ++k)
    if (k < n->count && n->keys[k] < key) i = k + 1;
  return i;
}

PULSE_END(btree_lower_bound, struct btree_node) {
  struct btree_state *st = PULSE_STATE(struct btree_state);
  pulse_u64 i = lower_index(cur_ptr, st->key);
  if (i < cur_ptr->count) {  /* keys[i] >= key: the best candidate so far */
    st->found = 1;
    st->result = cur_ptr->keys[i];
    st->node = cur_addr;
    st->pos = i;
    if (cur_ptr->keys[i] == st->key) return true;
  }
  if (cur_ptr->leaf) return true;
  st->next_pos = i;
  return false;
}

PULSE_NEXT(btree_lower_bound, struct btree_node) {
  const struct btree_state *st = PULSE_STATE(const struct btree_state);
  return cur_ptr->child[st->next_pos & BTREE_MAX_KEYS];
}
