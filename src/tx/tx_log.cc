// The replica's durable log (tx_log.h).
#include "tx/tx_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace pulse::tx {
namespace {

uint32_t Fnv1a32(std::span<const uint8_t> b) {
  uint32_t h = 2166136261u;
  for (uint8_t c : b) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

Status Errno(const std::string& what, const std::string& path) {
  return Status::IoError(fmt::format("tx log {}: {}: {}", path, what, std::strerror(errno)));
}

// The whole file behind `fd`.
Result<std::vector<uint8_t>> ReadAll(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Errno("fstat", path);
  std::vector<uint8_t> all(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < all.size()) {
    const ssize_t n = ::pread(fd, all.data() + got, all.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("read", path);
    got += static_cast<size_t>(n);
  }
  return all;
}

// Calls f(frame, payload) for each whole frame of `all`, in order; returns
// the offset after the last one (a torn or corrupt frame ends the walk).
template <typename F>
size_t ForEachFrame(std::span<const uint8_t> all, F&& f) {
  size_t at = 0;
  while (all.size() - at >= 8) {
    uint32_t len = 0, sum = 0;
    std::memcpy(&len, all.data() + at, 4);
    std::memcpy(&sum, all.data() + at + 4, 4);
    if (all.size() - at - 8 < len) break;
    std::span<const uint8_t> payload(all.data() + at + 8, len);
    if (Fnv1a32(payload) != sum) break;
    f(all.subspan(at, 8 + len), payload);
    at += 8 + len;
  }
  return at;
}

Status WriteAll(int fd, std::span<const uint8_t> bytes, const std::string& path) {
  size_t put = 0;
  while (put < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + put, bytes.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("write", path);
    put += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<TxLog>> TxLog::Open(const std::string& path, bool keep,
                                           const std::function<void(std::span<const uint8_t>)>& replay) {
  std::unique_ptr<TxLog> log(new TxLog());
  log->path_ = path;
  log->fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (keep ? 0 : O_TRUNC), 0600);
  if (log->fd_ < 0) return Errno("open", path);
  PULSE_ASSIGN_OR_RETURN(std::vector<uint8_t> all, ReadAll(log->fd_, path));
  const size_t at = ForEachFrame(all, [&](std::span<const uint8_t>, std::span<const uint8_t> payload) { replay(payload); });
  // A torn tail is cut off, so new records follow the last whole one.
  if (at != all.size() && ::ftruncate(log->fd_, static_cast<off_t>(at)) != 0) return Errno("truncate", path);
  if (::lseek(log->fd_, static_cast<off_t>(at), SEEK_SET) < 0) return Errno("seek", path);
  if (::fdatasync(log->fd_) != 0) return Errno("fdatasync", path);
  log->size_ = at;
  return log;
}

Status TxLog::Compact(const std::function<bool(std::span<const uint8_t>)>& keep) {
  PULSE_ASSIGN_OR_RETURN(std::vector<uint8_t> all, ReadAll(fd_, path_));
  std::vector<uint8_t> kept;
  uint64_t dropped = 0;
  ForEachFrame(all, [&](std::span<const uint8_t> frame, std::span<const uint8_t> payload) {
    if (keep(payload)) {
      kept.insert(kept.end(), frame.begin(), frame.end());
    } else {
      ++dropped;
    }
  });
  if (dropped == 0) return Status::Ok();
  const std::string tmp = path_ + ".compact";
  const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("open", tmp);
  Status s = WriteAll(fd, kept, tmp);
  if (s.ok() && ::fdatasync(fd) != 0) s = Errno("fdatasync", tmp);
  if (s.ok() && ::rename(tmp.c_str(), path_.c_str()) != 0) s = Errno("rename over the log", tmp);
  if (!s.ok()) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename is durable once the directory is.
  const size_t slash = path_.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  ::close(fd_);
  fd_ = fd;
  if (::lseek(fd_, 0, SEEK_END) < 0) return Errno("seek", path_);
  size_ = kept.size();
  dirty_ = false;
  ++counters_.compactions;
  counters_.dropped += dropped;
  return Status::Ok();
}

TxLog::~TxLog() {
  if (fd_ >= 0) ::close(fd_);
}

Status TxLog::Append(std::span<const uint8_t> record) {
  std::vector<uint8_t> frame(8 + record.size());
  const uint32_t len = static_cast<uint32_t>(record.size());
  const uint32_t sum = Fnv1a32(record);
  std::memcpy(frame.data(), &len, 4);
  std::memcpy(frame.data() + 4, &sum, 4);
  std::memcpy(frame.data() + 8, record.data(), record.size());
  PULSE_RETURN_IF_ERROR(WriteAll(fd_, frame, path_));
  size_ += frame.size();
  ++counters_.appends;
  counters_.bytes += frame.size();
  dirty_ = true;
  return Status::Ok();
}

Status TxLog::Sync() {
  if (!dirty_) return Status::Ok();
  const auto t0 = std::chrono::steady_clock::now();
  if (::fdatasync(fd_) != 0) return Errno("fdatasync", path_);
  counters_.sync_ns += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  ++counters_.syncs;
  dirty_ = false;
  return Status::Ok();
}

}  // namespace pulse::tx
