/* Writes far memory: the value of the node after this one (through a
 * pointer read from the node) and a counter in the current node (through
 * pulse_store_u64 and cur_addr).  Visits the list until sp[0] nodes. */
#include "nodes.h"

PULSE_END(far_store, struct node) {
  pulse_u64 *st = (pulse_u64 *)scratch_pad;
  pulse_store_u64(cur_addr + offsetof(struct node, value), cur_ptr->value + 1000);
  if (cur_ptr->next != NULL) cur_ptr->next->key = cur_ptr->key * 2;
  st[1] += 1;
  return st[1] >= st[0] || cur_ptr->next == NULL;
}

PULSE_NEXT(far_store, struct node) {
  return cur_ptr->next;
}
