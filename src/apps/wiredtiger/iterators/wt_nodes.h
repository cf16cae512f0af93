/* The WiredTiger-like application's far-memory records and its scan
 * iterator's scratch pad, shared by the iterator (C, BPF) and the C++ code.
 * The index is a pulse::ds::BTree (src/ds/iterators/ds_nodes.h) from 8-byte
 * keys to the far address of a value slot: 256 bytes, of which the first 240
 * are the value (30 words) and the rest is padding, so that an iteration's
 * window (the B+tree node size) never reaches past the slot. */
#ifndef PULSE_SRC_APPS_WIREDTIGER_ITERATORS_WT_NODES_H_
#define PULSE_SRC_APPS_WIREDTIGER_ITERATORS_WT_NODES_H_

#ifdef __cplusplus
#include <cstdint>
#define PULSE_WT_U64 std::uint64_t
#else
#include <pulse/iterator.h>
#define PULSE_WT_U64 pulse_u64
#endif

#define PULSE_WT_VALUE_BYTES 240
#define PULSE_WT_VALUE_WORDS 30
#define PULSE_WT_SLOT_BYTES 256
#define PULSE_WT_MAX_SCAN 128   /* records one scan returns at most */
#define PULSE_WT_LEAF_PENDING 16

struct pulse_wt_record {
  PULSE_WT_U64 key;
  PULSE_WT_U64 checksum; /* sum of the value's 30 words, mod 2^64 */
};

/* in: start, limit (1..128), the rest 0. */
struct pulse_wt_scan_state {
  PULSE_WT_U64 start;
  PULSE_WT_U64 limit;
  PULSE_WT_U64 count;     /* out: records in out[] */
  PULSE_WT_U64 at_value;  /* 1 while visiting the values of a leaf */
  PULSE_WT_U64 next_ptr;  /* end() -> next() */
  PULSE_WT_U64 next_leaf; /* the leaf after the current one */
  PULSE_WT_U64 pending;   /* value slots of the current leaf still to visit */
  PULSE_WT_U64 visited;   /* ... of which this many are done */
  PULSE_WT_U64 slot[PULSE_WT_LEAF_PENDING];
  struct pulse_wt_record out[PULSE_WT_MAX_SCAN];
};

#endif
