// Calibration of the dispatch engine's cost model (seed 000 4.1): t_i, the
// engine's time per instruction, and t_d, its time per window load, both
// measured on this machine's engine rather than guessed.
#pragma once

#include <cstdint>

#include "pulse/engine.h"
#include "pulse/status.h"

namespace pulse {

struct EngineCalibration {
  double t_i_ns = 0;        // marginal engine time per executed instruction
  double t_d_ns = 0;        // engine time per iteration of a minimal chase (one window load)
  uint32_t workspaces = 0;  // interleaving used for the measurement
};

// Builds a randomly linked list of `bytes` in private memory and times the
// engine on two programs that chase it: a minimal one (t_d) and one that adds
// a fixed number of ALU instructions per iteration (t_i from the
// difference).  Takes about 2 * seconds.  Errors: ResourceExhausted if the
// memory cannot be mapped.  `engine`: the engine measured (the one the
// memory node runs).
Result<EngineCalibration> CalibrateEngine(uint64_t bytes = 64ull << 20, uint32_t workspaces = 16,
                                          double seconds = 0.2, EngineKind engine = DefaultEngineKind());

}  // namespace pulse
