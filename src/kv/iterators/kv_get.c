/* GET of the MICA-style KV store (docs/kv.md): from the key's bucket, the
 * slots whose tag matches lead to items; the item with the key is copied
 * into the state.  Two loads on a hit without tag collisions (bucket, item). */
#include "kv_iter.h"

PULSE_END(kv_get, struct pulse_kv_node) {
  struct pulse_kv_state *st = KV_STATE;
  st->loads += 1;
  if (st->phase == 1) {
    if (!kv_key_matches(cur_ptr, st)) return kv_back_to_bucket(st);
#pragma unroll
    for (int k = 0; k < PULSE_KV_WINDOW_WORDS; ++k)
      if ((pulse_u64)k < st->item_words) st->data[k] = cur_ptr->w[k];
    st->item = cur_addr;
    st->outcome = PULSE_KV_HIT;
    return true;
  }
  if (!kv_chain_ended(cur_ptr, st)) return false;
  st->outcome = PULSE_KV_MISS;
  return true;
}

PULSE_NEXT(kv_get, struct pulse_kv_node) {
  return PULSE_ADDR(PULSE_STATE(const struct pulse_kv_state)->next);
}
