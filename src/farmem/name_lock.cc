#include "farmem/name_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

namespace pulse::farmem {

Result<NameLock> NameLock::Acquire(const std::string& path, const std::string& region, bool exclusive, bool create) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0666);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("region '{}': no such region ({})", region, path));
    return Status::IoError(fmt::format("region '{}': open {}: {}", region, path, std::strerror(errno)));
  }
  NameLock lock(fd);
  if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      return Status::IoError(fmt::format("region '{}': flock {}: {}", region, path, std::strerror(errno)));
    }
    if (exclusive) {
      return Status::AlreadyExists(fmt::format("region '{}': another process writes or reads it", region));
    }
    return Status::FailedPrecondition(fmt::format("region '{}': its writer has not made it read-only", region));
  }
  return lock;
}

NameLock& NameLock::operator=(NameLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

NameLock::~NameLock() {
  if (fd_ >= 0) close(fd_);
}

Status NameLock::Downgrade() {
  if (flock(fd_, LOCK_SH) != 0) return Status::IoError(fmt::format("flock (shared): {}", std::strerror(errno)));
  return Status::Ok();
}

bool NameLock::TryUpgrade() { return flock(fd_, LOCK_EX | LOCK_NB) == 0; }

}  // namespace pulse::farmem
