/* Far-memory node layouts of the pulse data-structure library (pulse::ds),
 * shared by the iterators (C, compiled for BPF by pulse_add_iterator) and the
 * C++ code that builds the structures with Client::Read/Write.  In C a far
 * pointer is a typed pointer (next() can `return cur_ptr->next;`); in C++ it
 * is the far address as a number.  Every layout is fixed-size, 8-byte
 * aligned and at most 256 bytes (one iteration's window).  The macros are
 * the public ones of pulse/far_ptr.h under this library's names. */
#ifndef PULSE_SRC_DS_ITERATORS_DS_NODES_H_
#define PULSE_SRC_DS_ITERATORS_DS_NODES_H_

#include <pulse/far_ptr.h>
#define PULSE_DS_U32 PULSE_U32
#define PULSE_DS_U64 PULSE_U64
#define PULSE_DS_FAR(type) PULSE_FAR(type)

/* ---- UnorderedMap: a bucket chain node. ---- */
struct pulse_ds_umap_node {
  PULSE_DS_U64 key;
  PULSE_DS_U64 value;
  PULSE_DS_FAR(struct pulse_ds_umap_node) next;
};
/* Find starts at the bucket's pseudo-node (the slot's address - 16, whose
 * `next` is the slot: the layout of src/ds/chained_hash.h) with at_bucket =
 * 1, so the chain's head is loaded near memory, not read by the CPU node
 * first: one request and one response for a node-local lookup. */
struct pulse_ds_umap_find_state {
  PULSE_DS_U64 key;        /* in */
  PULSE_DS_U64 found;      /* out: 1 or 0 */
  PULSE_DS_U64 value;      /* out */
  PULSE_DS_U64 node;       /* out: far address of the node holding key */
  PULSE_DS_U64 at_bucket;  /* in: 1 (cur_ptr is the pseudo-node); 0 after it */
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
/* An insert with the split of a full leaf offloaded (ds_btree_insert.c,
 * src/ds/btree_offload.h).  in: key, value, spare (a fresh 256-byte node on
 * the memory node of the key's leaf, 0: none); the rest 0. */
#define PULSE_DS_BTREE_INS_INSERTED 1 /* entered in its leaf in place */
#define PULSE_DS_BTREE_INS_SPLIT 2    /* entered; the leaf split into `spare` */
#define PULSE_DS_BTREE_INS_PRESENT 3  /* the key was there (old_value): nothing written */
#define PULSE_DS_BTREE_INS_DECLINED 4 /* nothing reachable written: insert at the CPU node */
#define PULSE_DS_BTREE_INS_LINKING 1   /* phase: on the way to the parent */
#define PULSE_DS_BTREE_INS_SHRINKING 2 /* phase: back to the leaf */
struct pulse_ds_btree_insert_state {
  PULSE_DS_U64 key;          /* in */
  PULSE_DS_U64 value;        /* in */
  PULSE_DS_U64 spare;        /* in */
  PULSE_DS_U64 result;       /* out: PULSE_DS_BTREE_INS_* */
  PULSE_DS_U64 old_value;    /* out: PRESENT's value */
  PULSE_DS_U64 leaf;         /* out: the key's leaf */
  PULSE_DS_U64 parent;       /* out: its parent (0: the root is a leaf) */
  PULSE_DS_U64 parent_count; /* the parent's key count on the way down */
  PULSE_DS_U64 sep;          /* out (SPLIT): the spare's first key */
  PULSE_DS_U64 phase;        /* 0 descending, then _LINKING, _SHRINKING */
  PULSE_DS_U64 next_pos;     /* end() -> next(): the child to descend into */
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

/* ---- Ordered binary search trees (Map, MultiMap, Set, MultiSet, AvlTree,
 * SplayTree, ScapegoatTree): one node layout for every balancing scheme, so
 * one set of iterators serves them all.  In-order key sequence is
 * non-decreasing (multi structures keep duplicates, in insertion order);
 * sets store value == key.  `meta` is the balancing word: red-black colour
 * (PULSE_DS_BST_RED / PULSE_DS_BST_BLACK) or AVL subtree height (a leaf
 * is 1); splay and scapegoat trees leave it 0. */
#define PULSE_DS_BST_RED 0
#define PULSE_DS_BST_BLACK 1
struct pulse_ds_bst_node {
  PULSE_DS_U64 key;
  PULSE_DS_U64 value;
  PULSE_DS_FAR(struct pulse_ds_bst_node) left;
  PULSE_DS_FAR(struct pulse_ds_bst_node) right;
  PULSE_DS_FAR(struct pulse_ds_bst_node) parent; /* 0 at the root */
  PULSE_DS_U64 meta;
};
/* A descent from the root for `key`.  kind FIND stops at the first node
 * equal to key; LOWER_BOUND finds the first key >= key, UPPER_BOUND the first
 * key > key.  The result is valid when found == 1 (for FIND the caller checks
 * rkey == key).  `last` is the node where the descent left the tree: the
 * parent of a new node inserted with this descent, the node a splay tree
 * splays after a miss. */
#define PULSE_DS_BST_FIND 0
#define PULSE_DS_BST_LOWER_BOUND 1
#define PULSE_DS_BST_UPPER_BOUND 2
struct pulse_ds_bst_search_state {
  PULSE_DS_U64 key;     /* in */
  PULSE_DS_U64 kind;    /* in: PULSE_DS_BST_FIND / _LOWER_BOUND / _UPPER_BOUND */
  PULSE_DS_U64 found;   /* out (in: 0) */
  PULSE_DS_U64 rkey;    /* out */
  PULSE_DS_U64 rvalue;  /* out */
  PULSE_DS_U64 rnode;   /* out: the far address of the result */
  PULSE_DS_U64 last;    /* out */
  PULSE_DS_U64 go_left; /* end() -> next() */
};
/* In-order aggregation of the values whose keys are in [agg.lo, agg.hi]: a
 * descent to the first key >= lo, then successor steps (right subtree's
 * leftmost node, or up the parent links until arriving from a left child)
 * until a key > hi. */
#define PULSE_DS_BST_DESCEND 0  /* looking for the first key >= lo */
#define PULSE_DS_BST_VISIT 1    /* at the next node in order */
#define PULSE_DS_BST_LEFTMOST 2 /* going down the left spine of a right subtree */
#define PULSE_DS_BST_ASCEND 3   /* going up from `from` */
struct pulse_ds_bst_agg_state {
  struct pulse_ds_agg_state agg; /* in: lo, hi and the neutral sums; out */
  PULSE_DS_U64 phase;            /* in: PULSE_DS_BST_DESCEND */
  PULSE_DS_U64 start;            /* descend: the smallest key >= lo seen (in: 0) */
  PULSE_DS_U64 from;             /* ascend: the child just left */
  PULSE_DS_U64 next;             /* end() -> next(): the next node */
};



/* ---- ForwardList: its nodes are pulse_ds_list_node with prev unused (0),
 * so the list's find and aggregate iterators walk it unchanged. ---- */

/* ---- Chained hashing (UnorderedMap, UnorderedSet, Bimap): chains of
 * pulse_ds_umap_node.  The offloaded insert (written in pulse assembly, see
 * src/ds/chained_hash.cc, since ALLOC has no C form) starts at the
 * bucket's "pseudo-node" slot - 16, whose next field is the bucket slot, and
 * uses this scratch pad layout. */
#define PULSE_DS_CHASH_MAX_REGIONS 16
struct pulse_ds_chash_insert_state {
  PULSE_DS_U64 key;         /* in */
  PULSE_DS_U64 value;       /* in */
  PULSE_DS_U64 bucket;      /* in: the bucket's pseudo-node (slot - 16) */
  PULSE_DS_U64 phase;       /* 0 at the bucket, 1 walking, 2 linking (in: 0) */
  PULSE_DS_U64 head_seen;   /* the chain head the walk started from */
  PULSE_DS_U64 result;      /* out: 1 inserted, 2 key present (in: 0) */
  PULSE_DS_U64 node;        /* out: the new node, or the one holding key */
  PULSE_DS_U64 old_value;   /* out: the present key's value */
  PULSE_DS_U64 region_count;                            /* ALLOC's table: */
  PULSE_DS_U64 regions[PULSE_DS_CHASH_MAX_REGIONS];     /* popped from the end */
};

/* ---- SkipList: a node with a tower of next pointers (152 bytes, every
 * node allocated at full size so one window reads any of them).  The head is
 * a sentinel node whose key is never compared.  next[l] is the next node at
 * level l; a node of height h has next[0..h) linked. ---- */
#define PULSE_DS_SKIP_MAX_LEVEL 16
struct pulse_ds_skip_node {
  PULSE_DS_U64 key;
  PULSE_DS_U64 value;
  PULSE_DS_U64 height;
  PULSE_DS_FAR(struct pulse_ds_skip_node) next[PULSE_DS_SKIP_MAX_LEVEL];
};
/* The descent (lower_bound / upper_bound / find / aggregate): the node the
 * search stands after (its tower copied into the scratch pad) and the level
 * being searched.  init(): cur_ptr = head, started = 0, level = the list's
 * top level - 1, strict = 0 for the first key >= key, 1 for > key. */
struct pulse_ds_skip_search_state {
  PULSE_DS_U64 key;       /* in */
  PULSE_DS_U64 strict;    /* in */
  PULSE_DS_U64 level;     /* in: top level index; then the level searched */
  PULSE_DS_U64 started;   /* in: 0 (the head is not compared) */
  PULSE_DS_U64 found;     /* out: 1 if a successor exists */
  PULSE_DS_U64 rkey;      /* out: its key */
  PULSE_DS_U64 rvalue;    /* out: its value */
  PULSE_DS_U64 rnode;     /* out: its far address */
  PULSE_DS_U64 next;      /* end() -> next(): the node to visit */
  PULSE_DS_U64 tower[PULSE_DS_SKIP_MAX_LEVEL]; /* the predecessor's next[] */
};
/* Aggregation of the values of keys in [agg.lo, agg.hi]: a descent to the
 * first key >= lo (search.key = lo), then a walk along level 0. */
struct pulse_ds_skip_agg_state {
  struct pulse_ds_skip_search_state search;
  struct pulse_ds_agg_state agg;
  PULSE_DS_U64 walking;   /* 0 descending, 1 walking level 0 */
};

#endif
