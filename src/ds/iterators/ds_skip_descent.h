/* One step of the skip-list descent, shared by the skip list's iterators.
 *
 * The search stands after a predecessor node whose tower (next[]) is copied
 * in the scratch pad, at some level; each iteration visits one candidate: the
 * predecessor's successor at that level.  A candidate that is still before
 * the key becomes the predecessor (its tower is copied); otherwise the search
 * drops to the highest lower level whose successor is a different node.  The
 * candidate seen at level 0 that is not before the key is the answer. */
#ifndef PULSE_SRC_DS_ITERATORS_DS_SKIP_DESCENT_H_
#define PULSE_SRC_DS_ITERATORS_DS_SKIP_DESCENT_H_

#include "ds_nodes.h"

#define PULSE_DS_SKIP_CONTINUE 0 /* st->next is the next candidate */
#define PULSE_DS_SKIP_NONE 1     /* every key is before the searched one */
#define PULSE_DS_SKIP_FOUND 2    /* the node at addr is the answer */

PULSE_INLINE int pulse_ds_skip_step(const struct pulse_ds_skip_node *c, pulse_addr_t addr,
                                    struct pulse_ds_skip_search_state *st) {
  pulse_u64 lvl = st->level;
  pulse_u64 key = c->key;
  bool before = !st->started || key < st->key || (st->strict && key == st->key);
  st->started = 1;
  if (before) {
#pragma unroll
    for (int k = 0; k < PULSE_DS_SKIP_MAX_LEVEL; ++k) st->tower[k] = (pulse_u64)c->next[k];
  } else {
    if (lvl == 0) {
      st->found = 1;
      st->rkey = key;
      st->rvalue = c->value;
      st->rnode = addr;
      return PULSE_DS_SKIP_FOUND;
    }
    lvl -= 1;
  }
  pulse_u64 pick = 0, picked = 0;
#pragma unroll
  for (int k = 0; k < PULSE_DS_SKIP_MAX_LEVEL; ++k) { /* the last match is the highest */
    pulse_u64 t = st->tower[k];
    if (k <= lvl && t != 0 && t != addr) {
      pick = t;
      picked = k;
    }
  }
  if (pick == 0) {
    if (before) {
      st->found = 0;
      return PULSE_DS_SKIP_NONE;
    }
    st->found = 1; /* every lower successor of the predecessor is this node */
    st->rkey = key;
    st->rvalue = c->value;
    st->rnode = addr;
    return PULSE_DS_SKIP_FOUND;
  }
  st->level = picked;
  st->next = pick;
  return PULSE_DS_SKIP_CONTINUE;
}

#endif
