/* PUT of the MICA-style KV store (docs/kv.md).  Walks the key's chain as GET
 * does, remembering the first free slot; an item with the key is
 * overwritten in place.  At the end of the chain (the key is new) it takes a
 * pre-allocated item from the state's region table (ALLOC's protocol: a
 * count and the addresses, the last one taken), writes the item, then its
 * pointer and tag into the free slot; with no free slot on the chain it
 * links the spare bucket the client gave it.  Without a region (or without
 * a spare bucket when one is needed) it stops before writing anything and
 * says so: the client adds one and issues the PUT again.  A free slot in an
 * earlier bucket is claimed by going back to it (phase 2) and checking it
 * is still free there, in the iteration that writes it. */
#include "kv_iter.h"

/* ALLOC's protocol on the state's region table: takes the last region and
 * writes the new item there; 0 (outcome NEED_REGION, nothing written) if
 * the table is empty. */
PULSE_INLINE pulse_u64 kv_alloc_item(struct pulse_kv_state *st) {
  if (st->region_count == 0) {
    st->outcome = PULSE_KV_NEED_REGION;
    return 0;
  }
  st->region_count -= 1;
  pulse_u64 item = st->regions[st->region_count & (PULSE_KV_MAX_REGIONS - 1)];
  kv_write_item(item, st);
  return item;
}

/* Inserts the new item into free slot k of bucket b at far address addr. */
PULSE_INLINE bool kv_insert(const struct pulse_kv_node *b, pulse_addr_t addr, int k, struct pulse_kv_state *st) {
  pulse_u64 item = kv_alloc_item(st);
  if (item == 0) return true;
  int tw = PULSE_KV_TAG_WORD + ((k >> 2) & 1);
  pulse_u64 tags = (b->w[tw] & ~((pulse_u64)0xffff << ((k & 3) * 16))) | (st->tag << ((k & 3) * 16));
  pulse_store_u64(addr + 8 * (PULSE_KV_ITEM_WORD + (k & 7)), item);
  pulse_store_u64(addr + 8 * tw, tags); /* published last */
  st->writes += 1;
  st->item = item;
  st->outcome = PULSE_KV_INSERTED;
  return true;
}

PULSE_END(kv_put, struct pulse_kv_node) {
  struct pulse_kv_state *st = KV_STATE;
  st->loads += 1;
  if (st->phase == 1) {
    if (!kv_key_matches(cur_ptr, st)) return kv_back_to_bucket(st);
    kv_write_item(cur_addr, st);
    st->item = cur_addr;
    st->outcome = PULSE_KV_UPDATED;
    return true;
  }
  if (st->phase == 2) {
    int k = (int)(st->free_slot - 1) & 7;
    if (kv_tag(cur_ptr, k) == 0) return kv_insert(cur_ptr, cur_addr, k, st);
    return kv_restart(st); /* taken since */
  }
  if (st->free_slot == 0) {
    int empty = -1;
#pragma unroll
    for (int k = 0; k < PULSE_KV_SLOTS; ++k)
      if (empty < 0 && kv_tag(cur_ptr, k) == 0) empty = k;
    if (empty >= 0) {
      st->free_bucket = cur_addr;
      st->free_slot = empty + 1;
    }
  }
  if (!kv_chain_ended(cur_ptr, st)) return false;
  if (st->free_slot != 0) {
    if (st->free_bucket == cur_addr) return kv_insert(cur_ptr, cur_addr, (int)(st->free_slot - 1) & 7, st);
    st->phase = 2;
    st->next = st->free_bucket;
    return false;
  }
  if (st->spare_bucket == 0) {
    st->outcome = PULSE_KV_NEED_BUCKET;
    return true;
  }
  pulse_u64 item = kv_alloc_item(st);
  if (item == 0) return true;
  pulse_store_u64(st->spare_bucket + 8 * PULSE_KV_ITEM_WORD, item);
  pulse_store_u64(st->spare_bucket + 8 * PULSE_KV_TAG_WORD, st->tag);
  pulse_store_u64(cur_addr, st->spare_bucket); /* linked last */
  st->writes += 2;
  st->item = item;
  st->outcome = PULSE_KV_INSERTED_OVERFLOW;
  return true;
}

PULSE_NEXT(kv_put, struct pulse_kv_node) {
  return PULSE_ADDR(PULSE_STATE(const struct pulse_kv_state)->next);
}
