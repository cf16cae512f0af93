// Test helper for the memory-node service tests: programs from assembler
// text, and traversal requests as a CPU node sends them.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "pulse/assembler.h"
#include "pulse/program.h"
#include "pulse/protocol.h"

namespace pulse::testing {

// The verified program of `text`; a test failure if it does not assemble
// or verify.
inline ProgramRef Build(const std::string& text) {
  auto insns = Assemble(text);
  EXPECT_TRUE(insns.ok()) << insns.status().ToString();
  auto p = VerifiedProgram::Create(std::move(*insns));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

// Request 1 of CPU node 9 for tenant 1: `p` at `cur_ptr` with an 8-byte
// scratch pad of zeros and at most 1000 iterations, with the code unless
// !with_program.
inline TraversalMessage Request(const ProgramRef& p, uint64_t cur_ptr, uint16_t flags = 0,
                                bool with_program = true) {
  TraversalMessage m;
  m.request_id = 1;
  m.cpu_node = 9;
  m.tenant = 1;
  m.flags = flags;
  m.program_hash = p->hash();
  if (with_program) m.program = p->encoded();
  m.cur_ptr = cur_ptr;
  m.scratch.assign(8, 0);
  m.max_iterations = 1000;
  return m;
}

}  // namespace pulse::testing
