/* Helpers shared by the KV store's offloaded programs (kv_get.c, kv_put.c,
 * kv_delete.c): a bucket's tags, a key comparison, an item copy.  Every loop
 * has a constant trip count (clang unrolls it). */
#ifndef PULSE_SRC_KV_ITERATORS_KV_ITER_H_
#define PULSE_SRC_KV_ITERATORS_KV_ITER_H_

#include <pulse/iterator.h>

#include "kv_layout.h"

#define KV_STATE PULSE_STATE(struct pulse_kv_state)

/* The tag of slot k (0-7) of bucket b. */
PULSE_INLINE pulse_u64 kv_tag(const struct pulse_kv_node *b, int k) {
  return (b->w[PULSE_KV_TAG_WORD + ((k >> 2) & 1)] >> ((k & 3) * 16)) & 0xffff;
}

/* The first slot >= from whose tag is `tag`, or -1. */
PULSE_INLINE int kv_find_tag(const struct pulse_kv_node *b, pulse_u64 tag, pulse_u64 from) {
  int found = -1;
#pragma unroll
  for (int k = 0; k < PULSE_KV_SLOTS; ++k)
    if (found < 0 && (pulse_u64)k >= from && kv_tag(b, k) == tag) found = k;
  return found;
}

/* Whether item holds the key in st->data (header's key length, key words). */
PULSE_INLINE bool kv_key_matches(const struct pulse_kv_node *item, const struct pulse_kv_state *st) {
  bool eq = (item->w[0] & 0xffff) == (st->data[0] & 0xffff);
#pragma unroll
  for (int k = 0; k < PULSE_KV_MAX_KEY_WORDS; ++k)
    if ((pulse_u64)k < st->key_words && item->w[1 + k] != st->data[1 + k]) eq = false;
  return eq;
}

/* Writes the item image st->data at far address `to` (one object write). */
PULSE_INLINE void kv_write_item(pulse_addr_t to, struct pulse_kv_state *st) {
#pragma unroll
  for (int k = 0; k < PULSE_KV_WINDOW_WORDS; ++k)
    if ((pulse_u64)k < st->item_words) pulse_store_u64(to + 8 * k, st->data[k]);
  st->writes += 1;
}

/* At a bucket in phase 0: goes to the item of the next slot with the key's
 * tag (phase 1) or to the overflow bucket; returns false then, true when the
 * chain ends without either. */
PULSE_INLINE bool kv_chain_ended(const struct pulse_kv_node *b, struct pulse_kv_state *st) {
  int k = kv_find_tag(b, st->tag, st->slot);
  if (k >= 0) {
    st->slot = k + 1;
    st->next = b->w[PULSE_KV_ITEM_WORD + (k & 7)];
    st->phase = 1;
    return false;
  }
  if (b->w[0] != 0) {
    st->bucket = b->w[0];
    st->next = b->w[0];
    st->slot = 0;
    return false;
  }
  return true;
}

/* At an item whose key differs (a tag collision): back to its bucket. */
PULSE_INLINE bool kv_back_to_bucket(struct pulse_kv_state *st) {
  st->phase = 0;
  st->next = st->bucket;
  return false;
}

/* The chain changed under the walk (a slot it meant to claim or clear):
 * walk it again from its first bucket. */
PULSE_INLINE bool kv_restart(struct pulse_kv_state *st) {
  st->phase = 0;
  st->bucket = st->head;
  st->next = st->head;
  st->slot = 0;
  st->free_slot = 0;
  return false;
}

#endif
