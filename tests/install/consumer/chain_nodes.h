/* The consumer's node layout, included by chain_find.c and main.cc. */
#ifndef CONSUMER_CHAIN_NODES_H_
#define CONSUMER_CHAIN_NODES_H_

#include <pulse/far_ptr.h>

struct chain_node {
  PULSE_U64 key;
  PULSE_U64 value;
  PULSE_FAR(struct chain_node) next;
};

/* chain_find's state: the key asked for in, found and value out. */
struct chain_find_state {
  PULSE_U64 key;
  PULSE_U64 found;
  PULSE_U64 value;
};

#endif
