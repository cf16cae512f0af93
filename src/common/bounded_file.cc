#include "common/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace pulse {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

Status Check(const struct stat& st, const std::string& path, uint64_t max_bytes, std::string_view what) {
  if (!S_ISREG(st.st_mode))
    return Status::InvalidArgument(fmt::format("{} '{}' is {}, not a regular file", what, path, KindOf(st.st_mode)));
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return Status::InvalidArgument(fmt::format("{} '{}' is {}, more than the limit of {}", what, path,
                                               DescribeBytes(static_cast<uint64_t>(st.st_size)),
                                               DescribeBytes(max_bytes)));
  return Status::Ok();
}

Status OpenError(const std::string& path, std::string_view what, int e) {
  if (e == ENOENT) return Status::NotFound(fmt::format("{} '{}' does not exist", what, path));
  return Status::IoError(fmt::format("cannot open {} '{}': {}", what, path, strerror(e)));
}

}  // namespace

std::string DescribeBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

Result<uint64_t> CheckInputFile(const std::string& path, uint64_t max_bytes, std::string_view what) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return OpenError(path, what, errno);
  PULSE_RETURN_IF_ERROR(Check(st, path, max_bytes, what));
  return static_cast<uint64_t>(st.st_size);
}

Result<std::string> ReadInputFile(const std::string& path, uint64_t max_bytes, std::string_view what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat refuses it.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return OpenError(path, what, errno);
  struct stat st {};
  Status s = fstat(fd, &st) == 0 ? Check(st, path, max_bytes, what)
                                 : Status::IoError(fmt::format("cannot stat {} '{}': {}", what, path, strerror(errno)));
  std::string text;
  if (s.ok()) text.reserve(static_cast<size_t>(st.st_size));
  char buffer[64 * 1024];
  while (s.ok()) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) s = Status::IoError(fmt::format("cannot read {} '{}': {}", what, path, strerror(errno)));
    if (n <= 0) break;
    if (text.size() + static_cast<size_t>(n) > max_bytes)
      s = Status::InvalidArgument(
          fmt::format("{} '{}' grew past the limit of {} while being read", what, path, DescribeBytes(max_bytes)));
    else
      text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  if (!s.ok()) return s;
  return text;
}

}  // namespace pulse
