// Laying out one iteration from translated end() and next() code: the
// window LOAD, the placement of BPF stack slots in the scratch pad, jump
// resolution, optimization, and the window size.  Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/diagnostics.h"
#include "compiler/optimize.h"
#include "compiler/translate.h"

namespace pulse::compiler {

struct LinkOptions {
  uint32_t scratch_pad_bytes = isa::kDefaultScratchPadBytes;
  std::optional<uint32_t> stack_offset;
  bool optimize = true;
  // The verifier's limit: the stack's zeroing at the terminals is left out
  // where it would make the iteration longer than this.
  uint32_t max_instructions = isa::kDefaultMaxInstructions;
};

struct LinkedProgram {
  std::vector<LinkedInsn> code;  // code[0] is LOAD data, window_bytes
  uint32_t window_bytes = 0;
  uint32_t stack_offset = 0;
  uint32_t stack_bytes = 0;
  bool stack_cleared = false;  // the slots are zeroed before every terminal
};

// Returns false (with an error in diags) if the stack does not fit.
bool LinkIteration(const std::string& iterator, std::vector<Emitted> end_code,
                   std::vector<Emitted> next_code, const LinkOptions& options,
                   DiagnosticSink* diags, LinkedProgram* out);

}  // namespace pulse::compiler
