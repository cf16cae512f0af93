// Running your own traversal with a typed state: the helper every far-memory
// structure built on Client uses (pulse::ds does too).
//
// An iterator's scratch pad is its state: what it reads at the start (the
// query) and what it leaves at the end (the answer).  Declare that state
// once, as a struct in a header that the C iterator and the C++ code both
// include, and let RunTypedTraversal pad it to the program's scratch pad,
// run it and hand it back:
//
//   // my_nodes.h, included by my_find.c and by the C++ side
//   #include <pulse/far_ptr.h>
//   struct my_node { PULSE_U64 key, value; PULSE_FAR(struct my_node) next; };
//   struct my_find_state { PULSE_U64 key, found, value; };
//
//   // CMakeLists.txt (find_package(pulse) provides pulse_add_iterator)
//   pulse_add_iterator(my_app my_find.c)
//
//   // C++
//   #include "pulse/iterators/my_find.h"
//   Result<ProgramRef> find = pulse::EmbeddedProgram<pulse::iterators::my_find>("my_find");
//   PULSE_ASSIGN_OR_RETURN(my_find_state st,
//                          pulse::RunTypedTraversal(client, *find, head, my_find_state{.key = 7}));
//
// include/pulse/far_ptr.h says how a far pointer is spelled on each side.
//
// Thread-safety: the functions are as thread-safe as the Client they are
// given (not at all: one thread per Client).  EmbeddedProgram may be called
// from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "pulse/client.h"
#include "pulse/program.h"
#include "pulse/status.h"

namespace pulse {

// Decodes and verifies a program embedded by pulse_add_iterator (its bytes,
// pulse::iterators::<name>()).  Internal naming `name` if the bytes do not
// decode or verify (a build that embedded a broken program).
Result<ProgramRef> LoadEmbeddedProgram(std::span<const uint8_t> bytes, std::string_view name);

// The same, decoded once per process and shared:
// EmbeddedProgram<iterators::my_find>("my_find").
template <std::span<const uint8_t> (*Bytes)()>
Result<ProgramRef> EmbeddedProgram(std::string_view name) {
  static const Result<ProgramRef> program = LoadEmbeddedProgram(Bytes(), name);
  return program;
}

// Runs `program` from cur_ptr with the state_bytes at `state` as the start
// of its scratch pad (zero-padded to the program's scratch_bytes) and copies
// the start of the final scratch pad back into `state`.  Errors: whatever
// Client::Traverse returns, and TraversalStatusError (pulse/traversal.h: the
// status's code, e.g. PermissionDenied for a protection fault, with a message
// naming `what`, the status, the address and the pc) when the traversal does
// not end with kDone; `state` is then unchanged.  The caller owns `state`.
Status RunTraversalBytes(Client& client, const ProgramRef& program, uint64_t cur_ptr, void* state,
                         size_t state_bytes, const TraverseOptions& options, std::string_view what);

// RunTraversalBytes with a typed state: the final state, or the error.
// State must be trivially copyable (it is copied byte for byte to and from
// the memory nodes) and laid out as the iterator's C struct.
template <typename State>
  requires std::is_trivially_copyable_v<State>
Result<State> RunTypedTraversal(Client& client, const ProgramRef& program, uint64_t cur_ptr, State state,
                                const TraverseOptions& options = {}, std::string_view what = "traversal") {
  PULSE_RETURN_IF_ERROR(RunTraversalBytes(client, program, cur_ptr, &state, sizeof(State), options, what));
  return state;
}

}  // namespace pulse
