/* The offloaded embedding reduction (seed 002 IV-C): folds one chunk of a
 * quantized row (64 int8 lanes and the row's fixed-point scale) into the
 * state's int64 accumulators per iteration, then moves to the next chunk
 * address of the state's list.  Integers only (clang's BPF target has no
 * floating point): acc[j] op= values[j] * scale, exact.  One iterator per
 * operator, each a straight line of 64 lanes (the three together would
 * exceed the verifier's program length). */
#include "dlrm_layout.h"

#define DLRM_OP_SUM 0
#define DLRM_OP_MAX 1
#define DLRM_OP_MIN 2

PULSE_INLINE int dlrm_fold(const struct pulse_dlrm_chunk *chunk, pulse_u8 *scratch_pad, int op) {
  struct pulse_dlrm_state *st = PULSE_STATE(struct pulse_dlrm_state);
  pulse_s64 scale = (pulse_s64)chunk->scale;
#pragma unroll
  for (int j = 0; j < PULSE_DLRM_LANES; ++j) {
    pulse_s64 v = (pulse_s64)chunk->values[j] * scale;
    if (op == DLRM_OP_SUM) {
      st->acc[j] += v;
    } else if (op == DLRM_OP_MAX) {
      if (v > st->acc[j]) st->acc[j] = v;
    } else {
      if (v < st->acc[j]) st->acc[j] = v;
    }
  }
  pulse_u32 pos = st->pos + 1;
  st->pos = pos;
  return pos >= st->count;
}

PULSE_INLINE const void *dlrm_next(pulse_u8 *scratch_pad) {
  const struct pulse_dlrm_state *st = PULSE_STATE(const struct pulse_dlrm_state);
  return PULSE_ADDR(st->addr[st->pos & (PULSE_DLRM_MAX_CHUNKS - 1)]);
}

PULSE_END(dlrm_sum, struct pulse_dlrm_chunk) { return dlrm_fold(cur_ptr, scratch_pad, DLRM_OP_SUM); }
PULSE_NEXT(dlrm_sum, struct pulse_dlrm_chunk) { return dlrm_next(scratch_pad); }

PULSE_END(dlrm_max, struct pulse_dlrm_chunk) { return dlrm_fold(cur_ptr, scratch_pad, DLRM_OP_MAX); }
PULSE_NEXT(dlrm_max, struct pulse_dlrm_chunk) { return dlrm_next(scratch_pad); }

PULSE_END(dlrm_min, struct pulse_dlrm_chunk) { return dlrm_fold(cur_ptr, scratch_pad, DLRM_OP_MIN); }
PULSE_NEXT(dlrm_min, struct pulse_dlrm_chunk) { return dlrm_next(scratch_pad); }
