/* A key lookup of `pulse kv serve` in one traversal: the index B+tree's
 * descent (as ds_btree_lower_bound, one iteration per level) to the entry of
 * the key's hash, then one more iteration at the chain's first record, whose
 * first 256 bytes it copies into the scratch pad: header, key and a small
 * value come back with the answer.
 *
 * With `insert` set it is also the index insert of a new key: if the hash is
 * absent and its leaf has room, the leaf's iteration enters (hash, insert)
 * in place (keys and slots after it shift up by one; the count word is
 * written last), so a SET of a new key needs no descent by one-sided reads.
 * A full leaf is left alone (PULSE_RESP_LEAF_FULL, with the leaf's
 * address and key range): the keyspace splits it once nothing else that
 * could meet it is in flight, near memory too (src/ds/btree_offload.h) or
 * with BTree::Insert; a fused SET's fresh record is written all the same.  The tree
 * header's size is not changed (it is a hint, recounted by BTree::Repair).
 *
 * It may start at a leaf instead of the root (a leaf the keyspace knows
 * holds the hash, with that leaf's parent and key range as inputs): the
 * first iteration is then the leaf's. */
#include "resp_lookup.h"
#include "../../ds/iterators/ds_btree_search.h"

/* The fused SET at the chain's first record `w` (its words): the record
 * header is {next, expire_ms, type | key_len << 32, val_len, room}, then the
 * key padded to 8, then the value (keyspace.cc's RecordHeader). */
PULSE_INLINE void resp_fused_set(const pulse_u64 *w, pulse_addr_t at, struct pulse_resp_lookup_state *st) {
  pulse_u64 key_len = st->key_len;
  bool same = (w[2] & 0xffffffff) == 1 && (w[2] >> 32) == key_len;
  pulse_u64 key_words = (key_len + 7) >> 3;
#pragma unroll
  for (int k = 0; k < PULSE_RESP_SET_WORDS; ++k)
    if ((pulse_u64)k < key_words && w[5 + k] != st->key[k]) same = false;
  pulse_u64 val_words = (st->val_len + 7) >> 3;
  pulse_u64 room = val_words < 8 ? 64 : 8 * val_words; /* kInlineValue */
  if (!same || 8 * key_words + room > w[4]) return;
  pulse_addr_t value_at = at + 40 + 8 * key_words;
#pragma unroll
  for (int k = 0; k < PULSE_RESP_SET_WORDS; ++k)
    if ((pulse_u64)k < val_words) pulse_store_u64(value_at + 8 * k, st->value[k]);
  pulse_store_u64(at + 8, 0);
  pulse_store_u64(at + 24, st->val_len);
  st->set_done = 1;
}

/* The fused SET of a new key, at the fresh record `insert` the leaf now
 * names (phase 2): writes the whole record. */
PULSE_INLINE void resp_fused_new(pulse_addr_t at, struct pulse_resp_lookup_state *st) {
  pulse_u64 key_words = (st->key_len + 7) >> 3;
  pulse_u64 val_words = (st->val_len + 7) >> 3;
#pragma unroll
  for (int k = 0; k < PULSE_RESP_SET_WORDS; ++k)
    if ((pulse_u64)k < key_words) pulse_store_u64(at + 40 + 8 * k, st->key[k]);
  pulse_addr_t value_at = at + 40 + 8 * key_words;
#pragma unroll
  for (int k = 0; k < PULSE_RESP_SET_WORDS; ++k)
    if ((pulse_u64)k < val_words) pulse_store_u64(value_at + 8 * k, st->value[k]);
  pulse_store_u64(at, 0);
  pulse_store_u64(at + 8, 0);
  pulse_store_u64(at + 16, 1 | (st->key_len << 32));
  pulse_store_u64(at + 24, st->val_len);
  pulse_store_u64(at + 32, 8 * key_words + 64); /* room: the padded key and kInlineValue */
  st->set_done = 2;
}

PULSE_END(resp_lookup, struct pulse_ds_btree_node) {
  struct pulse_resp_lookup_state *st = PULSE_STATE(struct pulse_resp_lookup_state);
  if (st->phase == 2) {
    resp_fused_new(cur_addr, st);
    return true;
  }
  if (st->phase) {
    const pulse_u64 *words = (const pulse_u64 *)cur_ptr;
#pragma unroll
    for (int k = 0; k < PULSE_RESP_WINDOW_WORDS; ++k) st->window[k] = words[k];
    if (st->set) resp_fused_set(words, cur_addr, st);
    return true;
  }
  pulse_u64 key = st->hash;
  pulse_u64 n = cur_ptr->count;
  if (!cur_ptr->leaf) {
    pulse_u64 c = pulse_ds_btree_child(cur_ptr, key);
    /* Child c holds the keys in [keys[c - 1], keys[c]). */
    if (c > 0) st->lo = cur_ptr->keys[(c - 1) & 15];
    if (c < n) st->hi = cur_ptr->keys[c & 15];
    st->next_pos = c;
    st->parent = cur_addr;
    return false;
  }
  st->leaf = cur_addr;
  pulse_u64 i = pulse_ds_btree_position(cur_ptr, key);
  if (i < n && cur_ptr->keys[i & 15] == key) {
    st->found = 1;
    st->record = (pulse_u64)cur_ptr->slot[i & 15];
    st->next_pos = i;
    st->phase = 1;
    return false;
  }
  /* Keys are exact: a hash not in this leaf is not in the tree. */
  st->found = 0;
  if (st->insert == 0) return true;
  if (n >= PULSE_DS_BTREE_MAX_KEYS) {
    st->inserted = PULSE_RESP_LEAF_FULL;
    if (st->set == 0) return true;
    /* A fused SET of a new key: its record is written all the same (the
     * SET is answered from it); the keyspace enters it in the index by a
     * split of this leaf, which the batch's replies need not wait for. */
    st->phase = 2;
    return false;
  }
#pragma unroll
  for (int k = PULSE_DS_BTREE_MAX_KEYS - 1; k > 0; --k)
    if ((pulse_u64)k > i && (pulse_u64)k <= n) {
      pulse_store_u64(cur_addr + 8 + 8 * k, cur_ptr->keys[k - 1]);
      pulse_store_u64(cur_addr + 8 + 8 * PULSE_DS_BTREE_MAX_KEYS + 8 * k, (pulse_u64)cur_ptr->slot[k - 1]);
    }
  pulse_store_u64(cur_addr + 8 + 8 * i, key);
  pulse_store_u64(cur_addr + 8 + 8 * PULSE_DS_BTREE_MAX_KEYS + 8 * i, st->insert);
  pulse_store_u64(cur_addr, ((pulse_u64)cur_ptr->leaf << 32) | (n + 1));
  st->inserted = PULSE_RESP_INSERTED;
  if (st->set == 0) return true;
  st->phase = 2; /* a fused SET of a new key: on to its record */
  return false;
}

PULSE_NEXT(resp_lookup, struct pulse_ds_btree_node) {
  const struct pulse_resp_lookup_state *st = PULSE_STATE(const struct pulse_resp_lookup_state);
  if (st->phase == 2) return PULSE_ADDR(st->insert);
  return cur_ptr->slot[st->next_pos & 15];
}
