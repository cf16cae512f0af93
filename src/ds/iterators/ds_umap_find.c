/* UnorderedMap::Find: walks one bucket chain.  init() (CPU node) puts the key
 * in the scratch pad and sets cur_ptr to the bucket's first node. */
#include "ds_nodes.h"

PULSE_END(ds_umap_find, struct pulse_ds_umap_node) {
  struct pulse_ds_umap_find_state *st = PULSE_STATE(struct pulse_ds_umap_find_state);
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
