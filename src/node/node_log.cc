#include "node/node_log.h"

#include <sys/time.h>
#include <unistd.h>

#include <ctime>

namespace pulse::node {

Result<LogLevel> ParseLogLevel(std::string_view text) {
  if (text == "error") return LogLevel::kError;
  if (text == "warn") return LogLevel::kWarn;
  if (text == "info") return LogLevel::kInfo;
  if (text == "debug") return LogLevel::kDebug;
  return Status::InvalidArgument(
      fmt::format("log level '{}' is not one of error, warn, info, debug", text));
}

void NodeLog::Write(LogLevel level, std::string_view message) const {
  static constexpr const char* kNames[] = {"ERROR", "WARN ", "INFO ", "DEBUG"};
  timeval tv{};
  gettimeofday(&tv, nullptr);
  tm local{};
  localtime_r(&tv.tv_sec, &local);
  char clock[16];
  std::strftime(clock, sizeof(clock), "%H:%M:%S", &local);
  std::string line = fmt::format("{}.{:03d} {} [{}] {}\n", clock, static_cast<int>(tv.tv_usec / 1000),
                                 kNames[static_cast<int>(level)], prefix_, message);
  // One write per line: concurrent writers never interleave within a line.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace pulse::node
