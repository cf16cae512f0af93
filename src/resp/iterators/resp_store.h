/* The state of the resp_store iterator (src/resp/iterators/resp_store.c),
 * shared by the iterator (C, compiled for BPF) and src/resp/keyspace.cc. */
#ifndef PULSE_SRC_RESP_ITERATORS_RESP_STORE_H_
#define PULSE_SRC_RESP_ITERATORS_RESP_STORE_H_

#include "../../ds/iterators/ds_nodes.h"

#define PULSE_RESP_STORE_WORDS 32 /* 256 bytes: at most one window */
/* A far record viewed as words (the iterator reads none of them). */
struct pulse_resp_record {
  PULSE_DS_U64 w[PULSE_RESP_STORE_WORDS];
};
struct pulse_resp_store_state {
  PULSE_DS_U64 words;                          /* in: how many of `image` to write */
  PULSE_DS_U64 written;                        /* out: 1 once written */
  PULSE_DS_U64 image[PULSE_RESP_STORE_WORDS];  /* in: the bytes to write at the record */
};

#endif
