// Checks of a BPF function that need no analysis: instructions pulse cannot
// express (calls, byte swaps, atomics, packet loads, cpu v4 forms), global
// data (relocations), and jump targets.  Internal.
#pragma once

#include "compiler/diagnostics.h"
#include "compiler/translate.h"

namespace pulse::compiler {

// Reports every problem to diags; returns false if there was one.
// *jumps_ok is false if some jump leaves the function (then the control flow
// cannot be analysed).
bool CheckInstructions(const FunctionInput& fn, DiagnosticSink* diags, bool* jumps_ok);

}  // namespace pulse::compiler
