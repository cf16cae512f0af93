/* Ordered trees: sum/min/max/count of the values whose keys are in [lo, hi],
 * in key order.  A small state machine in the scratch pad (st->phase): the
 * descent finds the first key >= lo, then each step moves to the in-order
 * successor (the leftmost node of the right subtree, or up the parent links
 * until arriving from a left child), one node per iteration, until a key
 * > hi or the last node. */
#include "ds_nodes.h"

/* Accumulates the node (the next one in order) and sets up the move to its
 * successor.  True when the walk is over. */
PULSE_INLINE bool visit(const struct pulse_ds_bst_node *n, struct pulse_ds_bst_agg_state *st,
                        pulse_addr_t addr) {
  if (n->key > st->agg.hi) return true;
  pulse_u64 v = n->value;
  st->agg.sum += v;
  if (v < st->agg.min) st->agg.min = v;
  if (v > st->agg.max) st->agg.max = v;
  st->agg.count += 1;
  if (n->right != NULL) {
    st->phase = PULSE_DS_BST_LEFTMOST;
    st->next = (pulse_u64)n->right;
    return false;
  }
  st->phase = PULSE_DS_BST_ASCEND;
  st->from = addr;
  st->next = (pulse_u64)n->parent;
  return n->parent == NULL;
}

PULSE_END(ds_bst_aggregate, struct pulse_ds_bst_node) {
  struct pulse_ds_bst_agg_state *st = PULSE_STATE(struct pulse_ds_bst_agg_state);
  pulse_u64 phase = st->phase;
  if (phase == PULSE_DS_BST_DESCEND) {
    if (cur_ptr->key >= st->agg.lo) {
      if (cur_ptr->left == NULL) return visit(cur_ptr, st, cur_addr); /* the first key >= lo */
      st->start = cur_addr;
      st->next = (pulse_u64)cur_ptr->left;
      return false;
    }
    if (cur_ptr->right != NULL) {
      st->next = (pulse_u64)cur_ptr->right;
      return false;
    }
    if (st->start == 0) return true; /* every key < lo */
    st->phase = PULSE_DS_BST_VISIT;
    st->next = st->start;
    return false;
  }
  if (phase == PULSE_DS_BST_LEFTMOST && cur_ptr->left != NULL) {
    st->next = (pulse_u64)cur_ptr->left;
    return false;
  }
  if (phase == PULSE_DS_BST_ASCEND && (pulse_u64)cur_ptr->left != st->from) {
    /* arrived from the right child: this node was visited already */
    st->from = cur_addr;
    st->next = (pulse_u64)cur_ptr->parent;
    return cur_ptr->parent == NULL;
  }
  return visit(cur_ptr, st, cur_addr);
}

PULSE_NEXT(ds_bst_aggregate, struct pulse_ds_bst_node) {
  const struct pulse_ds_bst_agg_state *st = PULSE_STATE(const struct pulse_ds_bst_agg_state);
  return PULSE_ADDR(st->next);
}
