// Log lines of the node processes (`pulse memnode`, `pulse switch`; the
// switch includes this header too): one line per event on stderr,
//   HH:MM:SS.mmm LEVEL [prefix] message
// so that the logs of a local cluster interleave readably.  Lines below the
// configured level cost one comparison.  Not thread-safe beyond what a
// single write(2) per line gives (lines from two threads do not mix).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "pulse/status.h"

namespace pulse::node {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// "error", "warn", "info" or "debug".
Result<LogLevel> ParseLogLevel(std::string_view text);

class NodeLog {
 public:
  NodeLog(std::string prefix, LogLevel level) : prefix_(std::move(prefix)), level_(level) {}

  bool enabled(LogLevel level) const { return level <= level_; }
  void Write(LogLevel level, std::string_view message) const;

  template <typename... Args>
  void Error(fmt::format_string<Args...> f, Args&&... args) const {
    Emit(LogLevel::kError, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Warn(fmt::format_string<Args...> f, Args&&... args) const {
    Emit(LogLevel::kWarn, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Info(fmt::format_string<Args...> f, Args&&... args) const {
    Emit(LogLevel::kInfo, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Debug(fmt::format_string<Args...> f, Args&&... args) const {
    Emit(LogLevel::kDebug, f, std::forward<Args>(args)...);
  }

 private:
  template <typename... Args>
  void Emit(LogLevel level, fmt::format_string<Args...> f, Args&&... args) const {
    if (enabled(level)) Write(level, fmt::format(f, std::forward<Args>(args)...));
  }
  std::string prefix_;
  LogLevel level_;
};

}  // namespace pulse::node
