// A region name's claim among the processes of this machine: flock() on a
// file named after the region.  A writer holds it exclusively, readers
// shared; the kernel releases it when the holder's process ends, so a
// writer that dies frees its name.  Two claims in one process conflict too
// (each open file is its own holder).  Not thread-safe; movable.
#pragma once

#include <string>

#include "pulse/status.h"

namespace pulse::farmem {

class NameLock {
 public:
  // Opens `path` (creating it when `create`) and takes it without waiting.
  // Errors: NotFound (no such file and not `create`), AlreadyExists
  // (exclusive: another holder exists), FailedPrecondition (shared: a writer
  // holds it), IoError; each names `region`.
  static Result<NameLock> Acquire(const std::string& path, const std::string& region, bool exclusive, bool create);
  NameLock() = default;  // holds nothing
  NameLock(NameLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  NameLock& operator=(NameLock&& other) noexcept;
  ~NameLock();

  // The open file (a descriptor or the region's data).
  int fd() const { return fd_; }
  // Exclusive -> shared, so readers may join.
  Status Downgrade();
  // Shared -> exclusive if no other process holds the name; false if one
  // does (nothing changes then).
  bool TryUpgrade();

 private:
  explicit NameLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace pulse::farmem
