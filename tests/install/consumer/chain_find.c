/* The value of the first node holding a key. */
#include "chain_nodes.h"

PULSE_END(chain_find, struct chain_node) {
  struct chain_find_state *st = PULSE_STATE(struct chain_find_state);
  if (cur_ptr->key == st->key) {
    st->found = 1;
    st->value = cur_ptr->value;
    return true;
  }
  if (cur_ptr->next == NULL) {
    st->found = 0;
    return true;
  }
  return false;
}

PULSE_NEXT(chain_find, struct chain_node) {
  return cur_ptr->next;
}
