/* UnorderedMap::Find: walks one bucket chain.  init() (CPU node) hashes the
 * key to its bucket slot and starts at the slot's pseudo-node (slot - 16,
 * whose `next` field is the slot) with at_bucket = 1: the first iteration
 * loads the chain's head near memory, so no read precedes the offload.  The
 * pseudo-node's key and value are other slots' words, never compared. */
#include "ds_nodes.h"

PULSE_END(ds_umap_find, struct pulse_ds_umap_node) {
  struct pulse_ds_umap_find_state *st = PULSE_STATE(struct pulse_ds_umap_find_state);
  if (st->at_bucket) {
    st->at_bucket = 0;
    if (cur_ptr->next == NULL) { /* an empty bucket */
      st->found = 0;
      return true;
    }
    return false;
  }
  if (cur_ptr->key == st->key) {
    st->found = 1;
    st->value = cur_ptr->value;
    st->node = cur_addr;
    return true;
  }
  if (cur_ptr->next == NULL) {
    st->found = 0;
    return true;
  }
  return false;
}

PULSE_NEXT(ds_umap_find, struct pulse_ds_umap_node) {
  return cur_ptr->next;
}
