// Shared helpers of the data-structure library: loading the compiled
// iterators, packing iterator state into scratch pads, running a read
// traversal under the structure's execution mode.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pulse/client.h"
#include "pulse/program.h"
#include "pulse/status.h"

namespace pulse::ds::internal {

// Decodes and verifies an embedded iterator (once per process per program).
Result<ProgramRef> LoadProgram(std::span<const uint8_t> bytes, std::string_view name);
// The verified program of an embedded iterator (pulse::iterators::<name>),
// decoded once per process: EmbeddedProgram<iterators::ds_list_find>("ds_list_find").
template <std::span<const uint8_t> (*Bytes)()>
Result<ProgramRef> EmbeddedProgram(std::string_view name) {
  static const Result<ProgramRef> program = LoadProgram(Bytes(), name);
  return program;
}
// Assembles and verifies a program written in pulse assembly (for traversals
// the C compiler cannot express, e.g. ALLOC).
Result<ProgramRef> LoadAssembly(std::string_view text, std::string_view name);

// Runs `program` from cur_ptr with `state` as the scratch pad (padded to the
// program's scratch_bytes) and copies the final scratch pad back into state.
// `mode` overrides the client's dispatch policy when set.  A traversal that
// does not end with kDone is TraversalStatusError naming `what`.
template <typename State>
Status RunTraversal(Client* client, const ProgramRef& program, uint64_t cur_ptr, State& state,
                    std::optional<ExecutionMode> mode, std::string_view what);

Status RunTraversalBytes(Client* client, const ProgramRef& program, uint64_t cur_ptr,
                         void* state, size_t state_bytes, std::optional<ExecutionMode> mode,
                         std::string_view what);

template <typename State>
Status RunTraversal(Client* client, const ProgramRef& program, uint64_t cur_ptr, State& state,
                    std::optional<ExecutionMode> mode, std::string_view what) {
  return RunTraversalBytes(client, program, cur_ptr, &state, sizeof(State), mode, what);
}

// Every element from `begin` to the end of a CPU-node range iterator (done(),
// Next()), each taken by element(iterator); `expected` sizes the vector.
template <typename Iterator, typename ElementFn>
auto CollectRange(Result<Iterator> begin, size_t expected, ElementFn element)
    -> Result<std::vector<decltype(element(*begin))>> {
  if (!begin.ok()) return begin.status();
  std::vector<decltype(element(*begin))> out;
  out.reserve(expected);
  for (Iterator& it = *begin; !it.done();) {
    out.push_back(element(it));
    PULSE_RETURN_IF_ERROR(it.Next());
  }
  return out;
}

// Reads / writes one fixed-size far object.
template <typename T>
Status ReadObject(Client* client, uint64_t addr, T& out) {
  return client->Read(addr, &out, sizeof(T));
}
template <typename T>
Status WriteObject(Client* client, uint64_t addr, const T& obj) {
  return client->Write(addr, &obj, sizeof(T));
}

}  // namespace pulse::ds::internal
