/* The state of the resp_lookup iterator (src/resp/iterators/resp_lookup.c),
 * shared by the iterator (C, compiled for BPF) and src/resp/keyspace.cc. */
#ifndef PULSE_SRC_RESP_ITERATORS_RESP_LOOKUP_H_
#define PULSE_SRC_RESP_ITERATORS_RESP_LOOKUP_H_

#include "../../ds/iterators/ds_nodes.h"

#define PULSE_RESP_WINDOW_WORDS 32 /* 256 bytes: one window */
#define PULSE_RESP_SET_WORDS 8     /* a fused SET's key and value: 64 bytes each */
struct pulse_resp_lookup_state {
  PULSE_DS_U64 hash;      /* in: the key's index hash */
  PULSE_DS_U64 found;     /* out: 1 if the index has hash */
  PULSE_DS_U64 record;    /* out: the far address of its chain's first record */
  PULSE_DS_U64 next_pos;  /* the child to descend into */
  PULSE_DS_U64 phase;     /* 0: in the index; 1: at the record */
  PULSE_DS_U64 window[PULSE_RESP_WINDOW_WORDS];  /* out: the record's first 256 bytes */
  PULSE_DS_U64 insert;    /* in: a record to enter under `hash` if it is absent; 0: a lookup only */
  PULSE_DS_U64 inserted;  /* out: 1 entered in its leaf; 2 the leaf is full (nothing written) */
  /* A plain SET fused with its lookup: if the chain's first record is the
   * key's string record and the value fits its room, the value is written
   * there (expiry cleared) and set_done is 1.  If the key is absent and
   * `insert` names a fresh record, the leaf gets (hash, insert) and the
   * traversal goes on to the record (phase 2) and writes it whole: set_done
   * is 2. */
  PULSE_DS_U64 set;       /* in: 1 to try it */
  PULSE_DS_U64 key_len;   /* in: at most 8 * PULSE_RESP_SET_WORDS bytes */
  PULSE_DS_U64 val_len;   /* in: at most 8 * PULSE_RESP_SET_WORDS bytes */
  PULSE_DS_U64 key[PULSE_RESP_SET_WORDS];    /* in: zero padded */
  PULSE_DS_U64 value[PULSE_RESP_SET_WORDS];  /* in: zero padded */
  PULSE_DS_U64 set_done;  /* out */
  PULSE_DS_U64 leaf;      /* out: the leaf reached (if full, the split's spare goes to its memory node) */
  PULSE_DS_U64 parent;    /* in/out: the last inner node passed (0: the root is a leaf, or unknown), where a split starts */
  /* in: 0 and ~0 (from the root; from a leaf, its range); out: the keys
   * the leaf reached may hold, [lo, hi) (the separators around it in the
   * inner nodes passed).  A split of that leaf
   * in flight changes where only these keys are found. */
  PULSE_DS_U64 lo;
  PULSE_DS_U64 hi;
};
#define PULSE_RESP_INSERTED 1
#define PULSE_RESP_LEAF_FULL 2 /* with `set`, the fresh record is written all the same (set_done 2) */

#endif
