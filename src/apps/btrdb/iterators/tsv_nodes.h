/* Far-memory layout of the BTrDB-like time-series tree (pulse::apps::TsvTree),
 * shared by the offloaded aggregate iterator (C, BPF) and the C++ builder.
 * Every node is 256 bytes (one window).  Ticks are reading indexes (120 per
 * second).  A node covers ticks [start, start + fanout * span): child k (or
 * reading k in a leaf, span 1) covers [start + k * span, start + (k+1) * span).
 * Inner nodes keep, per child, the child's address and the sum/min/max/count
 * of the readings below it, so a query uses the aggregate of a child its
 * window covers fully and descends only into the (at most two) children at
 * the window's edges. */
#ifndef PULSE_SRC_APPS_BTRDB_ITERATORS_TSV_NODES_H_
#define PULSE_SRC_APPS_BTRDB_ITERATORS_TSV_NODES_H_

#ifdef __cplusplus
#include <cstdint>
#define PULSE_TSV_U16 std::uint16_t
#define PULSE_TSV_U32 std::uint32_t
#define PULSE_TSV_U64 std::uint64_t
#else
#include <pulse/iterator.h>
#define PULSE_TSV_U16 pulse_u16
#define PULSE_TSV_U32 pulse_u32
#define PULSE_TSV_U64 pulse_u64
#endif

#define PULSE_TSV_FANOUT 7      /* children of an inner node */
#define PULSE_TSV_LEAF_VALUES 32 /* readings of a leaf */

struct pulse_tsv_child {
  PULSE_TSV_U64 addr; /* far address of the child */
  PULSE_TSV_U64 sum;
  PULSE_TSV_U32 min;
  PULSE_TSV_U32 max;
  PULSE_TSV_U32 count;
  PULSE_TSV_U32 pad;
};

struct pulse_tsv_node {
  PULSE_TSV_U64 start; /* first tick covered */
  PULSE_TSV_U32 span;  /* ticks per child (1 in a leaf) */
  PULSE_TSV_U16 count; /* children or readings */
  PULSE_TSV_U16 leaf;
  union {
    struct pulse_tsv_child child[PULSE_TSV_FANOUT];
    PULSE_TSV_U32 value[PULSE_TSV_LEAF_VALUES];
  } u;
};

/* The iterator's scratch pad.  in: lo, hi (inclusive ticks), sum 0,
 * min UINT32_MAX, max 0, count 0, next_ptr 0, pending 0. */
struct pulse_tsv_agg_state {
  PULSE_TSV_U64 lo;
  PULSE_TSV_U64 hi;
  PULSE_TSV_U64 sum;
  PULSE_TSV_U64 min;
  PULSE_TSV_U64 max;
  PULSE_TSV_U64 count;
  PULSE_TSV_U64 next_ptr; /* end() -> next(): where to go */
  PULSE_TSV_U64 pending;  /* the right-edge child still to visit (0: none) */
};

#endif
