/* An insert into a BTree in one offloaded traversal, splitting a full leaf
 * near memory (src/ds/btree_offload.h says when a caller may run it).
 *
 * The descent is ds_btree_lower_bound's (one iteration per inner node),
 * remembering the last inner node passed: the leaf's parent (a traversal
 * may also start at the leaf with its parent given).  At the leaf:
 *  - the key is there: nothing is written (PRESENT, its value returned);
 *  - the leaf has room: (key, value) goes in place, keys and slots after it
 *    shift up, the count word is written last (INSERTED);
 *  - the leaf is full, it has a parent with room, and the caller gave a
 *    spare node on this leaf's memory node: the leaf is split as
 *    BTree::Insert splits it (the 16 entries: 8 stay, 8 move to the spare,
 *    whose first key is the separator), in three iterations that keep every
 *    read correct after each one, the order btree.cc's redo log writes in:
 *      1. at the leaf: the right node is written whole into the spare (the
 *         spare's first word first: a spare on another memory node faults
 *         before anything is written), linked to the leaf's next leaf; it is
 *         not reachable yet;
 *      2. at the parent: (separator, spare) goes in after the leaf's slot
 *         (the parent's count written last): keys >= separator are now
 *         found in the spare, and still in the leaf;
 *      3. at the leaf again: it keeps the lower 8 entries and links to the
 *         spare (count word last)  (SPLIT);
 *    a parent that no longer has room or no longer names the leaf at step 2
 *    stops the traversal with nothing reachable changed (DECLINED, the spare
 *    is then written but unused);
 *  - otherwise (a full root leaf, a full parent, no spare): nothing is
 *    written (DECLINED): the CPU node's BTree::Insert does it.
 * The tree header (root, height, size) is never written: a split here never
 * changes the root or the height; the size is not counted (BTree::Repair
 * recounts it). */
#include "ds_btree_search.h"

/* Entry m (0..15) of the leaf's 15 entries with (key, value) inserted at
 * position i. */
PULSE_INLINE pulse_u64 ins_key(const struct pulse_ds_btree_node *n, pulse_u64 i, pulse_u64 key, int m) {
  if ((pulse_u64)m < i) return n->keys[m];
  if ((pulse_u64)m == i) return key;
  return n->keys[(m - 1) & 15];
}
PULSE_INLINE pulse_u64 ins_slot(const struct pulse_ds_btree_node *n, pulse_u64 i, pulse_u64 value, int m) {
  if ((pulse_u64)m < i) return (pulse_u64)n->slot[m];
  if ((pulse_u64)m == i) return value;
  return (pulse_u64)n->slot[(m - 1) & 15];
}

#define KEYS_AT(addr) ((addr) + 8)
#define SLOTS_AT(addr) ((addr) + 8 + 8 * PULSE_DS_BTREE_MAX_KEYS)
#define HALF 8 /* entries kept by the left leaf (and moved to the right one) */

/* Phase 1 (at the leaf): the right half into the spare. */
PULSE_INLINE void write_right(const struct pulse_ds_btree_node *n, pulse_u64 i,
                              struct pulse_ds_btree_insert_state *st) {
  pulse_addr_t r = st->spare;
  pulse_store_u64(r, ((pulse_u64)1 << 32) | HALF);
  /* Keys and slots past the count are never read: left as they are. */
#pragma unroll
  for (int m = 0; m < HALF; ++m) {
    pulse_store_u64(KEYS_AT(r) + 8 * m, ins_key(n, i, st->key, m + HALF));
    pulse_store_u64(SLOTS_AT(r) + 8 * m, ins_slot(n, i, st->value, m + HALF));
  }
  pulse_store_u64(SLOTS_AT(r) + 8 * PULSE_DS_BTREE_NEXT, (pulse_u64)n->slot[PULSE_DS_BTREE_NEXT]);
  st->sep = ins_key(n, i, st->key, HALF);
}

/* Phase 3 (at the leaf again): keep the lower half, link the spare. */
PULSE_INLINE void shrink_left(const struct pulse_ds_btree_node *n, pulse_addr_t at, pulse_u64 i,
                              struct pulse_ds_btree_insert_state *st) {
#pragma unroll
  for (int m = 0; m < HALF; ++m)
    if ((pulse_u64)m >= i) {
      pulse_store_u64(KEYS_AT(at) + 8 * m, ins_key(n, i, st->key, m));
      pulse_store_u64(SLOTS_AT(at) + 8 * m, ins_slot(n, i, st->value, m));
    }
  pulse_store_u64(SLOTS_AT(at) + 8 * PULSE_DS_BTREE_NEXT, st->spare);
  pulse_store_u64(at, ((pulse_u64)1 << 32) | HALF);
}

PULSE_END(ds_btree_insert, struct pulse_ds_btree_node) {
  struct pulse_ds_btree_insert_state *st = PULSE_STATE(struct pulse_ds_btree_insert_state);
  pulse_u64 key = st->key;
  pulse_u64 n = cur_ptr->count;
  if (st->phase == PULSE_DS_BTREE_INS_LINKING) {
    /* At the parent: (sep, spare) after the leaf's slot. */
    pulse_u64 sep = st->sep;
    pulse_u64 c = 0; /* keys[j] < sep for j < c: the leaf is child c */
#pragma unroll
    for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k)
      if (k < n && cur_ptr->keys[k] < sep) c = k + 1;
    if (cur_ptr->leaf || n >= PULSE_DS_BTREE_MAX_KEYS || (pulse_u64)cur_ptr->slot[c & 15] != st->leaf) {
      st->result = PULSE_DS_BTREE_INS_DECLINED;
      return true;
    }
#pragma unroll
    for (int k = PULSE_DS_BTREE_MAX_KEYS - 1; k > 0; --k)
      if ((pulse_u64)k > c && (pulse_u64)k <= n) pulse_store_u64(KEYS_AT(cur_addr) + 8 * k, cur_ptr->keys[k - 1]);
#pragma unroll
    for (int k = PULSE_DS_BTREE_MAX_KEYS; k > 1; --k)
      if ((pulse_u64)k > c + 1 && (pulse_u64)k <= n + 1)
        pulse_store_u64(SLOTS_AT(cur_addr) + 8 * k, (pulse_u64)cur_ptr->slot[k - 1]);
    pulse_store_u64(KEYS_AT(cur_addr) + 8 * (c & 15), sep);
    pulse_store_u64(SLOTS_AT(cur_addr) + 8 * ((c + 1) & 15), st->spare);
    pulse_store_u64(cur_addr, n + 1); /* leaf word 0: an inner node */
    st->phase = PULSE_DS_BTREE_INS_SHRINKING;
    return false;
  }
  if (st->phase == PULSE_DS_BTREE_INS_SHRINKING) {
    shrink_left(cur_ptr, cur_addr, pulse_ds_btree_position(cur_ptr, key), st);
    st->result = PULSE_DS_BTREE_INS_SPLIT;
    return true;
  }
  if (!cur_ptr->leaf) {
    st->next_pos = pulse_ds_btree_child(cur_ptr, key);
    st->parent = cur_addr;
    st->parent_count = n;
    return false;
  }
  st->leaf = cur_addr;
  pulse_u64 i = pulse_ds_btree_position(cur_ptr, key);
  if (i < n && cur_ptr->keys[i & 15] == key) {
    st->result = PULSE_DS_BTREE_INS_PRESENT;
    st->old_value = (pulse_u64)cur_ptr->slot[i & 15];
    return true;
  }
  if (n < PULSE_DS_BTREE_MAX_KEYS) {
#pragma unroll
    for (int k = PULSE_DS_BTREE_MAX_KEYS - 1; k > 0; --k)
      if ((pulse_u64)k > i && (pulse_u64)k <= n) {
        pulse_store_u64(KEYS_AT(cur_addr) + 8 * k, cur_ptr->keys[k - 1]);
        pulse_store_u64(SLOTS_AT(cur_addr) + 8 * k, (pulse_u64)cur_ptr->slot[k - 1]);
      }
    pulse_store_u64(KEYS_AT(cur_addr) + 8 * (i & 15), key);
    pulse_store_u64(SLOTS_AT(cur_addr) + 8 * (i & 15), st->value);
    pulse_store_u64(cur_addr, ((pulse_u64)1 << 32) | (n + 1));
    st->result = PULSE_DS_BTREE_INS_INSERTED;
    return true;
  }
  if (st->spare == 0 || st->parent == 0 || st->parent_count >= PULSE_DS_BTREE_MAX_KEYS) {
    st->result = PULSE_DS_BTREE_INS_DECLINED;
    return true;
  }
  write_right(cur_ptr, i, st);
  st->phase = PULSE_DS_BTREE_INS_LINKING;
  return false;
}

PULSE_NEXT(ds_btree_insert, struct pulse_ds_btree_node) {
  const struct pulse_ds_btree_insert_state *st = PULSE_STATE(const struct pulse_ds_btree_insert_state);
  if (st->phase == PULSE_DS_BTREE_INS_LINKING) return PULSE_ADDR(st->parent);
  if (st->phase == PULSE_DS_BTREE_INS_SHRINKING) return PULSE_ADDR(st->leaf);
  return cur_ptr->slot[st->next_pos & 15];
}
