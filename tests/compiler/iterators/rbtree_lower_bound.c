/* Red-black tree lower_bound (std::map::lower_bound): walk down, keeping the
 * last node whose key is >= the key searched. */
#include "nodes.h"

PULSE_END(rbtree_lower_bound, struct rb_node) {
  struct rb_state *st = PULSE_STATE(struct rb_state);
  if (cur_ptr->key >= st->key) {
    st->found = 1;
    st->result_key = cur_ptr->key;
    st->result_value = cur_ptr->value;
    return cur_ptr->key == st->key || cur_ptr->left == NULL;
  }
  return cur_ptr->right == NULL;
}

PULSE_NEXT(rbtree_lower_bound, struct rb_node) {
  const struct rb_state *st = PULSE_STATE(const struct rb_state);
  return cur_ptr->key >= st->key ? cur_ptr->left : cur_ptr->right;
}
