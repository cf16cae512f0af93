/* A key lookup of `pulse kv serve` in one traversal: the index B+tree's
 * descent (as ds_btree_lower_bound, one iteration per level) to the entry of
 * the key's hash, then one more iteration at the chain's first record, whose
 * first 256 bytes it copies into the scratch pad: header, key and a small
 * value come back with the answer. */
#include "resp_lookup.h"

PULSE_END(resp_lookup, struct pulse_ds_btree_node) {
  struct pulse_resp_lookup_state *st = PULSE_STATE(struct pulse_resp_lookup_state);
  if (st->phase) {
    const pulse_u64 *words = (const pulse_u64 *)cur_ptr;
#pragma unroll
    for (int k = 0; k < PULSE_RESP_WINDOW_WORDS; ++k) st->window[k] = words[k];
    return true;
  }
  pulse_u64 key = st->hash;
  pulse_u64 n = cur_ptr->count;
  if (!cur_ptr->leaf) {
    pulse_u64 i = 0;
#pragma unroll
    for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k)
      if (k < n && cur_ptr->keys[k] <= key) i = k + 1;
    st->next_pos = i;
    return false;
  }
  pulse_u64 i = 0;
#pragma unroll
  for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k)
    if (k < n && cur_ptr->keys[k] < key) i = k + 1;
  if (i < n && cur_ptr->keys[i & 15] == key) {
    st->found = 1;
    st->record = (pulse_u64)cur_ptr->slot[i & 15];
    st->next_pos = i;
    st->phase = 1;
    return false;
  }
  /* Keys are exact: a hash not in this leaf is not in the tree. */
  st->found = 0;
  return true;
}

PULSE_NEXT(resp_lookup, struct pulse_ds_btree_node) {
  const struct pulse_resp_lookup_state *st = PULSE_STATE(const struct pulse_resp_lookup_state);
  return cur_ptr->slot[st->next_pos & 15];
}
