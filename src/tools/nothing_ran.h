// A benchmark or soak that executed nothing must not exit 0 with a table of
// zeros: whatever made it do no work (a flag, a phase too short to finish one
// operation, a filter that selected nothing), the run measured nothing.
#pragma once

#include <cstdint>
#include <iostream>
#include <string_view>

#include <CLI/CLI.hpp>

namespace pulse::tools {

// Fails the command (exit 1) with a message naming what was counted when
// `count` is 0.
inline void RequireWorkDone(std::string_view command, uint64_t count, std::string_view what) {
  if (count > 0) return;
  std::cerr << "pulse " << command << ": executed nothing (" << what
            << " is 0): no figure was measured; check the flags that size the run\n";
  throw CLI::RuntimeError(1);
}

}  // namespace pulse::tools
