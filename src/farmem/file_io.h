// Whole-buffer file reads and writes at an offset (pread/pwrite until done,
// retrying EINTR), for the backends' file loading and the SSD baseline.
#pragma once

#include <cstdint>

#include "pulse/status.h"

namespace pulse::farmem {

// Reads up to `n` bytes at `offset`; fewer only at the end of the file.
// Returns how many.  IoError with errno's text.
Result<uint64_t> ReadFully(int fd, void* buf, uint64_t n, uint64_t offset);
// Writes all `n` bytes at `offset`.  IoError with errno's text.
Status WriteFully(int fd, const void* buf, uint64_t n, uint64_t offset);

}  // namespace pulse::farmem
