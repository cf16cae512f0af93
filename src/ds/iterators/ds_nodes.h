/* Far-memory node layouts of the pulse data-structure library (pulse::ds),
 * shared by the iterators (C, compiled for BPF by pulse_add_iterator) and the
 * C++ code that builds the structures with Client::Read/Write.  In C a far
 * pointer is a typed pointer (next() can `return cur_ptr->next;`); in C++ it
 * is the far address as a number.  Every layout is fixed-size, 8-byte
 * aligned and at most 256 bytes (one iteration's window). */
#ifndef PULSE_SRC_DS_ITERATORS_DS_NODES_H_
#define PULSE_SRC_DS_ITERATORS_DS_NODES_H_

#ifdef __cplusplus
#include <cstdint>
#define PULSE_DS_U32 std::uint32_t
#define PULSE_DS_U64 std::uint64_t
#define PULSE_DS_FAR(type) std::uint64_t
#else
#include <pulse/iterator.h>
#define PULSE_DS_U32 pulse_u32
#define PULSE_DS_U64 pulse_u64
#define PULSE_DS_FAR(type) type *
#endif

/* ---- UnorderedMap: a bucket chain node. ---- */
struct pulse_ds_umap_node {
  PULSE_DS_U64 key;
  PULSE_DS_U64 value;
  PULSE_DS_FAR(struct pulse_ds_umap_node) next;
};
struct pulse_ds_umap_find_state {
  PULSE_DS_U64 key;    /* in */
  PULSE_DS_U64 found;  /* out: 1 or 0 */
  PULSE_DS_U64 value;  /* out */
  PULSE_DS_U64 node;   /* out: far address of the node holding key */
};

/* ---- List: a doubly linked node. ---- */
struct pulse_ds_list_node {
  PULSE_DS_FAR(struct pulse_ds_list_node) next;
  PULSE_DS_FAR(struct pulse_ds_list_node) prev;
  PULSE_DS_U64 value;
};
struct pulse_ds_list_find_state {
  PULSE_DS_U64 value;  /* in */
  PULSE_DS_U64 found;  /* out */
  PULSE_DS_U64 node;   /* out: the first node holding value */
  PULSE_DS_U64 index;  /* out: its position (in: 0) */
};
/* Aggregation of the elements v with lo <= v <= hi (sum wraps mod 2^64). */
struct pulse_ds_agg_state {
  PULSE_DS_U64 lo;     /* in */
  PULSE_DS_U64 hi;     /* in */
  PULSE_DS_U64 sum;    /* out (in: 0) */
  PULSE_DS_U64 min;    /* out (in: UINT64_MAX) */
  PULSE_DS_U64 max;    /* out (in: 0) */
  PULSE_DS_U64 count;  /* out (in: 0) */
};

/* ---- BTree: a B+tree node of exactly 256 bytes.  Inner nodes: `count`
 * separator keys and count + 1 children in slot[0..count]; child i holds the
 * keys k with keys[i-1] <= k < keys[i].  Leaves: `count` sorted keys, their
 * values in slot[0..count) and the next leaf (0 at the end) in
 * slot[PULSE_DS_BTREE_NEXT]. */
#define PULSE_DS_BTREE_MAX_KEYS 15
#define PULSE_DS_BTREE_NEXT 15
struct pulse_ds_btree_node {
  PULSE_DS_U32 count;
  PULSE_DS_U32 leaf;
  PULSE_DS_U64 keys[PULSE_DS_BTREE_MAX_KEYS];
  PULSE_DS_FAR(struct pulse_ds_btree_node) slot[PULSE_DS_BTREE_MAX_KEYS + 1];
};
struct pulse_ds_btree_lb_state {
  PULSE_DS_U64 key;       /* in */
  PULSE_DS_U64 found;     /* out: 1 if some key >= key exists */
  PULSE_DS_U64 rkey;      /* out: the first such key */
  PULSE_DS_U64 rvalue;    /* out: its value */
  PULSE_DS_U64 next_pos;  /* end() -> next(): the child to descend into */
};
/* Range aggregation over keys in [lo, hi] of the values (agg fields as
 * pulse_ds_agg_state). */
struct pulse_ds_btree_agg_state {
  PULSE_DS_U64 lo;
  PULSE_DS_U64 hi;
  PULSE_DS_U64 sum;
  PULSE_DS_U64 min;
  PULSE_DS_U64 max;
  PULSE_DS_U64 count;
  PULSE_DS_U64 next_pos;  /* end() -> next() in inner nodes */
};

#endif
