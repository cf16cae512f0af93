/* WiredTiger's YCSB-E scan: the first `limit` records with keys >= start.
 * Descends the B+tree to the leaf that may hold start (one iteration per
 * level), takes that leaf's qualifying keys and value-slot addresses, visits
 * each value slot (one iteration each, summing its 30 words as the record's
 * checksum), then moves to the next leaf, until `limit` records or the end
 * of the leaf chain.  The leaf's iteration prefetches the value slots it
 * collected and the next leaf: the visits that follow are dependent loads
 * whose addresses are already known, and without the hint each would pay a
 * full miss in turn (a scan of one memory node is one traversal, with nothing
 * else to interleave). */
#include "../../../ds/iterators/ds_nodes.h"
#include "wt_nodes.h"

PULSE_END(wt_scan, struct pulse_ds_btree_node) {
  struct pulse_wt_scan_state *st = PULSE_STATE(struct pulse_wt_scan_state);
  if (st->at_value) {
    const pulse_u64 *w = (const pulse_u64 *)cur_ptr;
    pulse_u64 sum = 0;
#pragma unroll
    for (int k = 0; k < PULSE_WT_VALUE_WORDS; ++k) sum += w[k];
    pulse_u64 c = st->count;
    st->out[c & (PULSE_WT_MAX_SCAN - 1)].checksum = sum;
    st->count = c + 1;
    pulse_u64 v = st->visited + 1;
    st->visited = v;
    if (c + 1 >= st->limit) return true;
    if (v < st->pending) {
      st->next_ptr = st->slot[v & (PULSE_WT_LEAF_PENDING - 1)];
      return false;
    }
    st->at_value = 0;
    if (st->next_leaf == 0) return true;
    st->next_ptr = st->next_leaf;
    return false;
  }
  pulse_u64 key = st->start;
  pulse_u64 n = cur_ptr->count;
  if (!cur_ptr->leaf) {
    pulse_u64 i = 0; /* keys[j] <= start for j < i: child i */
#pragma unroll
    for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k)
      if (k < n && cur_ptr->keys[k] <= key) i = k + 1;
    st->next_ptr = (pulse_u64)cur_ptr->slot[i & 15];
    return false;
  }
  pulse_u64 want = st->limit - st->count;
  pulse_u64 c = st->count;
  pulse_u64 p = 0;
#pragma unroll
  for (int k = 0; k < PULSE_DS_BTREE_MAX_KEYS; ++k) {
    if (k < n && cur_ptr->keys[k] >= key && p < want) {
      PULSE_PREFETCH(cur_ptr->slot[k]);
      st->slot[p & (PULSE_WT_LEAF_PENDING - 1)] = (pulse_u64)cur_ptr->slot[k];
      st->out[(c + p) & (PULSE_WT_MAX_SCAN - 1)].key = cur_ptr->keys[k];
      p += 1;
    }
  }
  st->next_leaf = (pulse_u64)cur_ptr->slot[PULSE_DS_BTREE_NEXT];
  if (p < want && st->next_leaf != 0) PULSE_PREFETCH(st->next_leaf);
  if (p != 0) {
    st->pending = p;
    st->visited = 0;
    st->at_value = 1;
    st->next_ptr = st->slot[0];
    return false;
  }
  if (st->next_leaf == 0) return true;
  st->next_ptr = st->next_leaf;
  return false;
}

PULSE_NEXT(wt_scan, struct pulse_ds_btree_node) {
  const struct pulse_wt_scan_state *st = PULSE_STATE(const struct pulse_wt_scan_state);
  return PULSE_ADDR(st->next_ptr);
}
