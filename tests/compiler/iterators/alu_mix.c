/* Not a data structure: exercises ALU64/ALU32 operations, signed and 32-bit
 * compares, narrow loads, and register-indexed window and scratch pad
 * accesses, for differential tests against the BPF code. */
#include "nodes.h"

struct mix_node {
  pulse_u64 a, b, c, d;
  pulse_s64 s, t;
  pulse_u32 x, y;
  pulse_u16 h[4];
  pulse_u8 bytes[16];
  FAR(struct mix_node) next;
};

PULSE_END(alu_mix, struct mix_node) {
  pulse_u64 *out = (pulse_u64 *)scratch_pad;
  pulse_u32 *out32 = (pulse_u32 *)scratch_pad;
  const pulse_u64 a = cur_ptr->a, b = cur_ptr->b | 1, c = cur_ptr->c & 63;
  out[1] = a * b + out[0];
  out[2] = a / b;
  out[3] = a % b;
  out[4] = a << c;
  out[5] = a >> c;
  out[6] = (pulse_u64)(cur_ptr->s >> c);
  out[7] = (a ^ cur_ptr->d) - (a & 0xff00);
  out[8] = -a;
  out[9] = ~a | (b & 12);
  const pulse_u32 x = cur_ptr->x, y = cur_ptr->y | 1;
  out32[20] = x * y + (x >> 3);
  out32[21] = x / y;
  out32[22] = x % y;
  out32[23] = (pulse_u32)((pulse_s32)x >> 5);
  out[12] = cur_ptr->h[1] + cur_ptr->bytes[3] * 7u;
  out[13] = cur_ptr->s < cur_ptr->t ? 11 : 22;
  out[14] = (pulse_s32)x < (pulse_s32)y ? 33 : (x > 1000 ? 44 : 55);
  out[15] = cur_ptr->bytes[cur_ptr->bytes[1] & 15];
  out[16 + (cur_ptr->bytes[0] & 7)] += a;
  if (cur_ptr->h[0] == 7) out[24] = cur_addr;
  return (a & 3) == 0;
}

PULSE_NEXT(alu_mix, struct mix_node) {
  return cur_ptr->b > cur_ptr->c ? cur_ptr->next : PULSE_ADDR(cur_ptr->d & ~7ull);
}
