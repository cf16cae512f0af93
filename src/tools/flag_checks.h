// Range checks for the numeric flags of every `pulse` command, made at parse
// time: CLI11 then fails the command before it runs, with a message naming
// the flag ("--rounds: 0 is out of range [1, 1000]") and a non-zero exit.
// One validator, so NaN, infinities and non-numbers are refused the same way
// everywhere (CLI::Range lets NaN through: no comparison with NaN fails).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace pulse::tools {

// The value must be a finite number within [min, max].  For a list option
// each element is checked.
inline CLI::Validator Within(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const char* begin = text.c_str();
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(begin, &end);
        if (end == begin || *end != '\0' || errno == ERANGE || !std::isfinite(v))
          return fmt::format("expected a finite number, got '{}'", text);
        if (v < min || v > max) return fmt::format("{} is out of range [{}, {}]", text, min, max);
        return "";
      },
      fmt::format("in [{}, {}]", min, max));
}

// Common ranges.
inline constexpr double kMaxCount = 1e12;        // operations, keys, samples
inline constexpr double kMaxTimeoutMs = 3.6e6;   // one hour
inline constexpr double kMaxPollWindowUs = 1e7;  // ten seconds

}  // namespace pulse::tools
