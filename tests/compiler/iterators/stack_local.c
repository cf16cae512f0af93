/* A local array clang must keep on the stack (volatile, indexed): the
 * translator places it in the scratch pad after the iterator's own bytes. */
#include "nodes.h"

struct pair_node {
  pulse_u64 v[4];
  FAR(struct pair_node) next;
};

PULSE_END(stack_local, struct pair_node) {
  volatile pulse_u64 tmp[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) tmp[k] = cur_ptr->v[k] * (k + 1);
  pulse_u64 *out = (pulse_u64 *)scratch_pad;
  out[1] = tmp[out[0] & 3] + tmp[(out[0] >> 2) & 3];
  return out[1] > 1000;
}

PULSE_NEXT(stack_local, struct pair_node) {
  return cur_ptr->next;
}
