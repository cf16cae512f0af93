/* unordered_map::find as seed 001 Listing 3 writes it (init() runs on the
 * CPU node: it copies the key to the scratch pad and sets cur_ptr to the
 * bucket's first node). */
#include "nodes.h"

typedef pulse_u64 key_type;
typedef pulse_u64 value_type;

PULSE_NEXT(unordered_map_find, struct node) {
  return cur_ptr->next;
}

PULSE_END(unordered_map_find, struct node) {
  // Key found
  key_type key = *((key_type *)scratch_pad);
  if (key == cur_ptr->key) {
    *((value_type *)scratch_pad) = cur_ptr->value;
    return true;
  }
  // Key not found
  if (cur_ptr->next == NULL) {
    *((unsigned int *)scratch_pad) = KEY_NOT_FOUND;
    return true;
  }
  return false;
}
