/* pulse/iterator.h: writing the offloaded half of a pulse iterator in C.
 *
 * A pulse iterator (seed 001 section 3, Listing 1) has three parts: init()
 * runs on the CPU node and sets cur_ptr and the scratch pad; end() and next()
 * run near memory, once per node visited.  This header is for end() and
 * next().  They are plain C compiled by `clang -O2 -target bpf` and then
 * translated into the pulse ISA by `pulse compile` (or pulse_add_iterator()
 * in CMake, or pulse::CompileIteratorFile in C++).
 *
 * One iteration of the compiled program is:
 *
 *     LOAD data, N          the node at cur_ptr: N bytes, inferred from the
 *                           accesses of end() and next() (N <= 256)
 *     if (end())  RETURN    the traversal is done; the scratch pad is the answer
 *     cur_ptr = next()
 *     NEXT_ITER
 *
 * Example: unordered_map::find (seed 001 Listing 3):
 *
 *     #include <pulse/iterator.h>
 *     #define KEY_NOT_FOUND 0xffffffffu
 *     struct node { pulse_u64 key; pulse_u64 value; struct node *next; };
 *
 *     PULSE_NEXT(umap_find, struct node) {
 *       return cur_ptr->next;
 *     }
 *     PULSE_END(umap_find, struct node) {
 *       pulse_u64 key = *((pulse_u64 *)scratch_pad);        // key found
 *       if (key == cur_ptr->key) {
 *         *((pulse_u64 *)scratch_pad) = cur_ptr->value;
 *         return true;
 *       }
 *       if (cur_ptr->next == NULL) {                           // key not found
 *         *((unsigned int *)scratch_pad) = KEY_NOT_FOUND;
 *         return true;
 *       }
 *       return false;
 *     }
 *
 * Inside PULSE_END / PULSE_NEXT bodies these names are defined:
 *   cur_ptr      const T *: the node, a typed view of the loaded window.  Only
 *                bytes [0, 256) of the node can be read; the compiler infers
 *                the window from the offsets used (constant or array indexes
 *                with a bounded index, e.g. node->child[i]).
 *   scratch_pad  pulse_u8 *: the iterator's state (PULSE_SCRATCH_PAD_BYTES);
 *                read and write it freely.  PULSE_STATE(type) views it as a
 *                struct.  It is the answer returned to the CPU node.
 *   cur_addr     pulse_addr_t: the far address of the node (cur_ptr's value
 *                as a number), e.g. to write the node: pulse_store_u64(
 *                cur_addr + offsetof(struct node, value), v).
 * end() returns true (PULSE_DONE) to stop, false (PULSE_CONTINUE) to go on.
 * next() returns the far address of the next node, as a pointer read from the
 * node (`return cur_ptr->next;`) or PULSE_ADDR(integer).
 *
 * Rules (the compiler rejects violations with a diagnostic naming the
 * function and, with -g (default), the source line):
 *   - no loops that clang cannot fully unroll (use constant trip counts and
 *     `#pragma unroll`); jumps only go forward within one iteration;
 *   - no calls: helper functions must be inlined (static inline or
 *     PULSE_INLINE); no recursion; the one exception is PULSE_PREFETCH;
 *   - no global or static data (including constant tables and strings);
 *   - reads only from the node window, the scratch pad and local variables;
 *     a pointer read from the node (cur_ptr->next) may be written through
 *     (a far-memory STORE) but not read through: the next node is read by
 *     returning its address from next();
 *   - the node window is a read-only snapshot (write the node through
 *     pulse_store_*(cur_addr + offset, ...));
 *   - cur_ptr is changed only by next()'s return value.
 *   - registers do not survive from one iteration to the next: keep state in
 *     the scratch pad.  Local variables that clang keeps on the stack are
 *     placed in a part of the scratch pad beyond the bytes the iterator uses
 *     itself (see CompileOptions::stack_offset in pulse/compiler.h).
 *   - an array index the compiler cannot bound (e.g. read from the scratch
 *     pad without `& 15` or a range check) widens the window to 256 bytes,
 *     with a warning; an index outside the window faults at run time;
 *   - division or remainder by zero stops the traversal with a fault (BPF
 *     would yield 0).
 * end() runs before next() in the same iteration: what end() writes to the
 * scratch pad, next() reads (e.g. the child index found by a node search).
 *
 * The header needs no C library: it only uses compiler builtins.
 */
#ifndef PULSE_ITERATOR_H_
#define PULSE_ITERATOR_H_

#include <stdbool.h>
#include <stddef.h>

typedef __UINT8_TYPE__ pulse_u8;
typedef __UINT16_TYPE__ pulse_u16;
typedef __UINT32_TYPE__ pulse_u32;
typedef __UINT64_TYPE__ pulse_u64;
typedef __INT8_TYPE__ pulse_s8;
typedef __INT16_TYPE__ pulse_s16;
typedef __INT32_TYPE__ pulse_s32;
typedef __INT64_TYPE__ pulse_s64;
typedef pulse_u64 pulse_addr_t; /* a far address */

/* The largest node window one iteration can load (isa::kMaxWindowBytes). */
#define PULSE_WINDOW_BYTES 256
/* The scratch pad size the iterator is written for (4 KB by default, seed 001
 * section 3.1).  Define it before including this header to change it, and
 * pass the same size to the compiler (CompileOptions::scratch_pad_bytes). */
#ifndef PULSE_SCRATCH_PAD_BYTES
#define PULSE_SCRATCH_PAD_BYTES 4096
#endif

/* The context end() and next() receive.  The translator knows this layout:
 * ctx offset 0 is cur_ptr, [8, 264) the node window (data[off]), then a
 * guard that no valid access touches (a node struct read beyond the window
 * lands there and is rejected, instead of being taken for the scratch pad),
 * and [16384, 16384 + scratch pad bytes) the scratch pad (sp[off]).  The
 * struct is never instantiated near memory; only these offsets matter. */
#define PULSE_CTX_CUR_PTR_OFFSET 0
#define PULSE_CTX_DATA_OFFSET 8
#define PULSE_CTX_SCRATCH_OFFSET 16384

struct pulse_ctx {
  pulse_addr_t cur_ptr;
  pulse_u8 data[PULSE_WINDOW_BYTES];
  pulse_u8 pulse_guard_[PULSE_CTX_SCRATCH_OFFSET - PULSE_CTX_DATA_OFFSET - PULSE_WINDOW_BYTES];
  pulse_u8 scratch_pad[PULSE_SCRATCH_PAD_BYTES];
};

/* end()'s two outcomes. */
#define PULSE_DONE 1     /* RETURN: the traversal is complete */
#define PULSE_CONTINUE 0 /* call next() and start the next iteration */

/* Force inlining of helpers called from end()/next(). */
#define PULSE_INLINE static inline __attribute__((always_inline))

/* A far address as next()'s return value. */
#define PULSE_ADDR(addr) ((const void *)(pulse_addr_t)(addr))
/* The scratch pad viewed as a struct: PULSE_STATE(struct find_state)->key. */
#define PULSE_STATE(type) ((type *)scratch_pad)

#define PULSE_ITER_STR_(x) #x
#define PULSE_ITER_STR(x) PULSE_ITER_STR_(x)

/* PULSE_END(name, node_type) { ... return true/false; }
 * Declares the end() function of iterator `name`.  The body follows the macro
 * like a function body. */
#define PULSE_END(name, node_type)                                                \
  PULSE_INLINE int name##__pulse_end_body(                                        \
      const node_type *cur_ptr __attribute__((unused)),                           \
      pulse_u8 *scratch_pad __attribute__((unused)),                              \
      pulse_addr_t cur_addr __attribute__((unused)));                             \
  __attribute__((section("pulse/end/" PULSE_ITER_STR(name)), used)) int           \
  name##__pulse_end(struct pulse_ctx *ctx) {                                      \
    return name##__pulse_end_body((const node_type *)ctx->data, ctx->scratch_pad, \
                                  ctx->cur_ptr)                                   \
               ? 1                                                                \
               : 0;                                                               \
  }                                                                               \
  PULSE_INLINE int name##__pulse_end_body(                                        \
      const node_type *cur_ptr __attribute__((unused)),                           \
      pulse_u8 *scratch_pad __attribute__((unused)),                              \
      pulse_addr_t cur_addr __attribute__((unused)))

/* PULSE_NEXT(name, node_type) { ... return next_pointer; }
 * Declares the next() function of iterator `name`: it returns the address of
 * the next node, which becomes cur_ptr. */
#define PULSE_NEXT(name, node_type)                                                \
  PULSE_INLINE const void *name##__pulse_next_body(                                \
      const node_type *cur_ptr __attribute__((unused)),                            \
      pulse_u8 *scratch_pad __attribute__((unused)),                               \
      pulse_addr_t cur_addr __attribute__((unused)));                              \
  __attribute__((section("pulse/next/" PULSE_ITER_STR(name)), used)) pulse_addr_t  \
  name##__pulse_next(struct pulse_ctx *ctx) {                                      \
    return (pulse_addr_t)name##__pulse_next_body((const node_type *)ctx->data,     \
                                                 ctx->scratch_pad, ctx->cur_ptr);  \
  }                                                                                \
  PULSE_INLINE const void *name##__pulse_next_body(                                \
      const node_type *cur_ptr __attribute__((unused)),                            \
      pulse_u8 *scratch_pad __attribute__((unused)),                               \
      pulse_addr_t cur_addr __attribute__((unused)))

/* Far-memory writes (STORE [rN+off]).  Any pointer read from the node can be
 * written through directly too: cur_ptr->next->value = v. */
PULSE_INLINE void pulse_store_u8(pulse_addr_t addr, pulse_u8 v) { *(volatile pulse_u8 *)addr = v; }
PULSE_INLINE void pulse_store_u16(pulse_addr_t addr, pulse_u16 v) { *(volatile pulse_u16 *)addr = v; }
PULSE_INLINE void pulse_store_u32(pulse_addr_t addr, pulse_u32 v) { *(volatile pulse_u32 *)addr = v; }
PULSE_INLINE void pulse_store_u64(pulse_addr_t addr, pulse_u64 v) { *(volatile pulse_u64 *)addr = v; }

/* PULSE_PREFETCH(addr): a hint that a later iteration will visit the node at
 * far address addr (a number, such as a pointer read from the node), so that
 * the memory node starts bringing its window toward the cache now.  Use it
 * where one iteration learns several nodes that the next ones visit in turn
 * (a B+tree leaf's value slots): their misses then overlap instead of each
 * costing a dependent miss.  It compiles to PREFETCH (pulse/isa.h), changes
 * no result, and an address the memory node does not hold for this tenant is
 * ignored.  Outside a BPF build (a host compiler reading this header) it
 * does nothing. */
#define PULSE_BPF_HELPER_PREFETCH 0x50550001 /* compiler::kPulseHelperPrefetch */
#if defined(__bpf__)
static void (*const pulse_prefetch_helper_)(pulse_addr_t) =
    (void (*)(pulse_addr_t))PULSE_BPF_HELPER_PREFETCH;
#define PULSE_PREFETCH(addr) pulse_prefetch_helper_((pulse_addr_t)(addr))
#else
#define PULSE_PREFETCH(addr) ((void)(addr))
#endif

#endif /* PULSE_ITERATOR_H_ */
