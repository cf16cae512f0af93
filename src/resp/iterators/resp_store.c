/* An asynchronous write of `pulse kv serve`: one iteration at a record that
 * stores the state's image (header, key, small value) over its first bytes.
 * Client has no asynchronous Write; a traversal does, so every record write
 * of a batch is in flight together and the batch is answered once they have
 * all completed (src/resp/keyspace.cc, Keyspace::Settle).  The record is
 * written through cur_addr; nothing of the node window is read. */
#include "resp_store.h"

PULSE_END(resp_store, struct pulse_resp_record) {
  struct pulse_resp_store_state *st = PULSE_STATE(struct pulse_resp_store_state);
#pragma unroll
  for (int k = 0; k < PULSE_RESP_STORE_WORDS; ++k)
    if ((pulse_u64)k < st->words) pulse_store_u64(cur_addr + 8 * k, st->image[k]);
  st->written = 1;
  return true;
}

PULSE_NEXT(resp_store, struct pulse_resp_record) {
  return PULSE_ADDR(0);
}
