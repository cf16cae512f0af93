// The list-summing program (tests/engine/sum_list_program.h) assembled and
// verified, for the security tests' traversals.
#pragma once

#include <gtest/gtest.h>

#include "engine/sum_list_program.h"
#include "pulse/assembler.h"
#include "pulse/program.h"

namespace pulse::testing {

// A test failure (and nullptr) if it does not assemble or verify.
inline ProgramRef SumListProgram() {
  auto insns = Assemble(kSumListProgram);
  EXPECT_TRUE(insns.ok()) << insns.status().ToString();
  if (!insns.ok()) return nullptr;
  auto p = VerifiedProgram::Create(std::move(*insns));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : nullptr;
}

}  // namespace pulse::testing
