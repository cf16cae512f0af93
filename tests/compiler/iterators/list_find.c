/* std::list find(key): scratch pad in: key at 0; out: found flag at 8 and
 * the 16-byte value at 16. */
#include "nodes.h"

struct list_find_state {
  pulse_u64 key;
  pulse_u64 found;
  pulse_u64 value[2];
};

PULSE_END(list_find, struct list_node) {
  struct list_find_state *st = PULSE_STATE(struct list_find_state);
  if (cur_ptr->key == st->key) {
    st->found = 1;
    st->value[0] = cur_ptr->value[0];
    st->value[1] = cur_ptr->value[1];
    return true;
  }
  if (cur_ptr->next == NULL) {
    st->found = 0;
    return true;
  }
  return false;
}

PULSE_NEXT(list_find, struct list_node) {
  return cur_ptr->next;
}
