#include "farmem/file_io.h"

#include <errno.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

namespace pulse::farmem {

Result<uint64_t> ReadFully(int fd, void* buf, uint64_t n, uint64_t offset) {
  uint64_t done = 0;
  while (done < n) {
    const ssize_t got = pread(fd, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::IoError(fmt::format("read at offset {}: {}", offset + done, std::strerror(errno)));
    if (got == 0) break;
    done += static_cast<uint64_t>(got);
  }
  return done;
}

Status WriteFully(int fd, const void* buf, uint64_t n, uint64_t offset) {
  uint64_t done = 0;
  while (done < n) {
    const ssize_t put =
        pwrite(fd, static_cast<const char*>(buf) + done, n - done, static_cast<off_t>(offset + done));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return Status::IoError(fmt::format("write at offset {}: {}", offset + done, std::strerror(errno)));
    done += static_cast<uint64_t>(put);
  }
  return Status::Ok();
}

}  // namespace pulse::farmem
