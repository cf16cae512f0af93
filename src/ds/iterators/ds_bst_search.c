/* Ordered trees (Map, MultiMap, Set, MultiSet, AvlTree, SplayTree,
 * ScapegoatTree): one descent from the root for find, lower_bound and
 * upper_bound (st->kind), one iteration per level.  A node that may be the
 * answer is recorded before going left; the descent ends at a null child
 * (or, for FIND, at a node equal to the key). */
#include "ds_nodes.h"

PULSE_END(ds_bst_search, struct pulse_ds_bst_node) {
  struct pulse_ds_bst_search_state *st = PULSE_STATE(struct pulse_ds_bst_search_state);
  pulse_u64 key = st->key;
  pulse_u64 k = cur_ptr->key;
  bool equal = k == key;
  bool hit = k > key || (equal && st->kind != PULSE_DS_BST_UPPER_BOUND);
  st->last = cur_addr;
  st->go_left = hit;
  if (hit) {
    st->found = 1;
    st->rkey = k;
    st->rvalue = cur_ptr->value;
    st->rnode = cur_addr;
    if (equal && st->kind == PULSE_DS_BST_FIND) return true;
    return cur_ptr->left == NULL;
  }
  return cur_ptr->right == NULL;
}

PULSE_NEXT(ds_bst_search, struct pulse_ds_bst_node) {
  const struct pulse_ds_bst_search_state *st = PULSE_STATE(const struct pulse_ds_bst_search_state);
  return st->go_left ? cur_ptr->left : cur_ptr->right;
}
