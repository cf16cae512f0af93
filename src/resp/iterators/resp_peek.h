/* The state of the resp_peek iterator (src/resp/iterators/resp_peek.c),
 * shared by the iterator (C, compiled for BPF) and src/resp/keyspace.cc. */
#ifndef PULSE_SRC_RESP_ITERATORS_RESP_PEEK_H_
#define PULSE_SRC_RESP_ITERATORS_RESP_PEEK_H_

#include "../../ds/iterators/ds_nodes.h"

/* The keyspace directory as words (keyspace.cc's Directory, version 2):
 * magic, version, index header, key count, lock, wanted. */
struct pulse_resp_directory_words {
  PULSE_DS_U64 w[6];
};
struct pulse_resp_peek_state {
  PULSE_DS_U64 wanted; /* out: the directory's `wanted` word */
  PULSE_DS_U64 read;   /* out: 1 once read */
};

#endif
