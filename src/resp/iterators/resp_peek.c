/* An asynchronous read of the keyspace directory's `wanted` word (a server
 * waiting for the lock): one iteration at the directory, in flight with
 * the batch's writes, so the holder learns whether to yield without a
 * round trip of its own at the end of the batch (Keyspace::End). */
#include "resp_peek.h"

PULSE_END(resp_peek, struct pulse_resp_directory_words) {
  struct pulse_resp_peek_state *st = PULSE_STATE(struct pulse_resp_peek_state);
  st->wanted = cur_ptr->w[5];
  st->read = 1;
  return true;
}

PULSE_NEXT(resp_peek, struct pulse_resp_directory_words) {
  return PULSE_ADDR(0);
}
