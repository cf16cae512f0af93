/* The far-memory layout of a quantized embedding table and the state of the
 * offloaded reduction, shared by the iterators (C, BPF) and src/dlrm (C++).
 *
 * A row of dimension D is ceil(D / 64) chunks; a chunk is one iteration's
 * window: the row's scale (u32, fixed point with PULSE_DLRM_SCALE_SHIFT
 * fraction bits), 4 reserved bytes and 64 int8 values (lanes past D are 0).
 * Every chunk of a row carries the row's scale, so any chunk reduces alone.
 * Row r of a table starts at base + r * chunks * sizeof(struct
 * pulse_dlrm_chunk).
 *
 * The state: the far addresses of the chunks to fold (one lane group of one
 * table), how many, the next one, and one int64 accumulator per lane.  The
 * CPU node fills addr[0..count) and sets cur_ptr = addr[0]; every iteration
 * folds the chunk at cur_ptr into acc and moves to addr[++pos]. */
#ifndef PULSE_SRC_DLRM_ITERATORS_DLRM_LAYOUT_H_
#define PULSE_SRC_DLRM_ITERATORS_DLRM_LAYOUT_H_

#ifdef __cplusplus
#include <cstdint>
#define PULSE_DLRM_S8 std::int8_t
#define PULSE_DLRM_U32 std::uint32_t
#define PULSE_DLRM_S64 std::int64_t
#define PULSE_DLRM_U64 std::uint64_t
#else
#include <pulse/iterator.h>
#define PULSE_DLRM_S8 pulse_s8
#define PULSE_DLRM_U32 pulse_u32
#define PULSE_DLRM_S64 pulse_s64
#define PULSE_DLRM_U64 pulse_u64
#endif

#define PULSE_DLRM_LANES 64
#define PULSE_DLRM_SCALE_SHIFT 24
/* Chunks one traversal folds at most (a power of two: the index is masked). */
#define PULSE_DLRM_MAX_CHUNKS 64

struct pulse_dlrm_chunk {
  PULSE_DLRM_U32 scale;    /* the row's scale * 2^PULSE_DLRM_SCALE_SHIFT, > 0 */
  PULSE_DLRM_U32 reserved; /* 0 */
  PULSE_DLRM_S8 values[PULSE_DLRM_LANES];
};

struct pulse_dlrm_state {
  PULSE_DLRM_U32 count; /* chunks in addr, 1..PULSE_DLRM_MAX_CHUNKS */
  PULSE_DLRM_U32 pos;   /* the chunk at cur_ptr: addr[pos] */
  PULSE_DLRM_U64 reserved;
  PULSE_DLRM_S64 acc[PULSE_DLRM_LANES]; /* sum / max / min of value * scale */
  PULSE_DLRM_U64 addr[PULSE_DLRM_MAX_CHUNKS];
};

#endif /* PULSE_SRC_DLRM_ITERATORS_DLRM_LAYOUT_H_ */
