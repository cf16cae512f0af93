/* DELETE of the MICA-style KV store (docs/kv.md): GET's walk to the item,
 * then back to its bucket to clear the slot (tag and item pointer).  The
 * item itself is freed by the client (its slab's free list). */
#include "kv_iter.h"

PULSE_END(kv_delete, struct pulse_kv_node) {
  struct pulse_kv_state *st = KV_STATE;
  st->loads += 1;
  if (st->phase == 1) {
    if (!kv_key_matches(cur_ptr, st)) return kv_back_to_bucket(st);
    st->item = cur_addr;
    st->phase = 2;
    st->next = st->bucket;
    return false;
  }
  if (st->phase == 2) {
    int k = (int)(st->slot - 1) & 7;
    if (cur_ptr->w[PULSE_KV_ITEM_WORD + k] == st->item && kv_tag(cur_ptr, k) == st->tag) {
      int tw = PULSE_KV_TAG_WORD + ((k >> 2) & 1);
      pulse_u64 cleared = cur_ptr->w[tw] & ~((pulse_u64)0xffff << ((k & 3) * 16));
      pulse_store_u64(cur_addr + 8 * (PULSE_KV_ITEM_WORD + k), 0);
      pulse_store_u64(cur_addr + 8 * tw, cleared);
      st->writes += 1;
      st->outcome = PULSE_KV_HIT;
      return true;
    }
    return kv_restart(st);
  }
  if (!kv_chain_ended(cur_ptr, st)) return false;
  st->outcome = PULSE_KV_MISS;
  return true;
}

PULSE_NEXT(kv_delete, struct pulse_kv_node) {
  return PULSE_ADDR(PULSE_STATE(const struct pulse_kv_state)->next);
}
