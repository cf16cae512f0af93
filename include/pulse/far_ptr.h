/* Node layouts shared by an iterator (C, compiled for BPF by
 * pulse_add_iterator) and the C++ code that builds and reads the structure
 * (Client::Read/Write, RunTypedTraversal in pulse/typed_traversal.h).
 *
 * Put the layout in one header both sides include and spell its fields with
 * these macros:
 *
 *   #include <pulse/far_ptr.h>
 *   struct my_node {
 *     PULSE_U64 key;
 *     PULSE_FAR(struct my_node) next;   // a far pointer
 *   };
 *
 * In the iterator a far pointer is a typed pointer, so next() can
 * `return cur_ptr->next;`; in C++ it is the far address as a 64-bit number.
 * Both sides then agree on every offset (8-byte fields, no padding
 * surprises).  A node must fit one iteration's window (256 bytes).
 *
 * Use from C and C++; no library to link. */
#ifndef PULSE_FAR_PTR_H_
#define PULSE_FAR_PTR_H_

#ifdef __cplusplus
#include <cstdint>
#define PULSE_U32 std::uint32_t
#define PULSE_U64 std::uint64_t
#define PULSE_FAR(type) std::uint64_t
#else
#include <pulse/iterator.h>
#define PULSE_U32 pulse_u32
#define PULSE_U64 pulse_u64
#define PULSE_FAR(type) type *
#endif

#endif /* PULSE_FAR_PTR_H_ */
