/* Node layouts shared by the test iterators (C, compiled for BPF) and the
 * tests (C++, which build the same structures in far memory).  In C a far
 * pointer is a typed pointer (so next() can `return cur_ptr->next;`); in C++
 * it is the far address as a number. */
#ifndef PULSE_TESTS_COMPILER_NODES_H_
#define PULSE_TESTS_COMPILER_NODES_H_

#ifdef __cplusplus
#include <cstdint>
typedef std::uint32_t pulse_u32;
typedef std::uint64_t pulse_u64;
typedef std::int64_t pulse_s64;
#define FAR(type) std::uint64_t
#else
#include <pulse/iterator.h>
#define FAR(type) type *
#endif

#define KEY_NOT_FOUND 0xffffffffu

/* unordered_map bucket chain node (seed 001 Listing 3). */
struct node {
  pulse_u64 key;
  pulse_u64 value;
  FAR(struct node) next;
};

/* std::list node: prev/next first, then the element (a 16-byte value). */
struct list_node {
  FAR(struct list_node) next;
  FAR(struct list_node) prev;
  pulse_u64 key;
  pulse_u64 value[2];
};

/* A B-tree node of exactly 256 bytes: up to 15 sorted keys and, in inner
 * nodes, count + 1 children.  The values live elsewhere (the result of
 * lower_bound is an iterator: node and position). */
#define BTREE_MAX_KEYS 15
struct btree_node {
  pulse_u32 count;
  pulse_u32 leaf;
  pulse_u64 keys[BTREE_MAX_KEYS];
  FAR(struct btree_node) child[BTREE_MAX_KEYS + 1];
};

/* The B-tree lower_bound state in the scratch pad. */
struct btree_state {
  pulse_u64 key;       /* in: the key searched */
  pulse_u64 found;     /* out: 1 if a key >= key exists */
  pulse_u64 result;    /* out: that key */
  pulse_u64 node;      /* out: the node holding it */
  pulse_u64 pos;       /* out: its position in the node */
  pulse_u64 next_pos;  /* end() -> next(): the child to descend into */
};

/* A red-black tree node (libstdc++ _Rb_tree_node layout: color, parent,
 * left, right, then the value). */
struct rb_node {
  pulse_u32 color;
  pulse_u32 pad;
  FAR(struct rb_node) parent;
  FAR(struct rb_node) left;
  FAR(struct rb_node) right;
  pulse_u64 key;
  pulse_u64 value;
};

struct rb_state {
  pulse_u64 key;    /* in */
  pulse_u64 found;  /* out */
  pulse_u64 result_key;
  pulse_u64 result_value;
};

/* A time-series leaf: up to 14 (timestamp, value) points, leaves chained in
 * timestamp order (BTrDB-like). */
#define TS_POINTS 14
struct ts_point {
  pulse_u64 ts;
  pulse_s64 value;
};
struct ts_leaf {
  pulse_u32 count;
  pulse_u32 pad;
  FAR(struct ts_leaf) next;
  struct ts_point points[TS_POINTS];
};

/* Range aggregation over [lo, hi]. */
struct agg_state {
  pulse_u64 lo;      /* in */
  pulse_u64 hi;      /* in */
  pulse_s64 sum;     /* out (in: 0) */
  pulse_s64 min;     /* out (in: INT64_MAX) */
  pulse_s64 max;     /* out (in: INT64_MIN) */
  pulse_u64 count;   /* out (in: 0) */
};

#endif
