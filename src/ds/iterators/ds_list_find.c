/* List::Find: the first node holding a value, and its position. */
#include "ds_nodes.h"

PULSE_END(ds_list_find, struct pulse_ds_list_node) {
  struct pulse_ds_list_find_state *st = PULSE_STATE(struct pulse_ds_list_find_state);
  if (cur_ptr->value == st->value) {
    st->found = 1;
    st->node = cur_addr;
    return true;
  }
  st->index += 1;
  if (cur_ptr->next == NULL) {
    st->found = 0;
    return true;
  }
  return false;
}

PULSE_NEXT(ds_list_find, struct pulse_ds_list_node) {
  return cur_ptr->next;
}
