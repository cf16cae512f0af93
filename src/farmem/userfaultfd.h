// A userfaultfd descriptor with the operations the pager needs: missing and
// write-protect faults on anonymous memory.  Each call is one ioctl; errors
// come back as Status naming the call and errno.  Thread-safe (the kernel
// serialises what needs it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "pulse/status.h"

namespace pulse::farmem {

// One page-fault message read from the descriptor.
struct UffdFault {
  uint64_t address = 0;
  bool write = false;          // a write access
  bool write_protect = false;  // a write to a write-protected page (else: a missing page)
};

class Userfaultfd {
 public:
  // Opens a descriptor (non-blocking, close-on-exec) with write-protect
  // faults.  Unavailable, saying why (no permission: root, CAP_SYS_PTRACE or
  // vm.unprivileged_userfaultfd; no UFFD_FEATURE_PAGEFAULT_FLAG_WP).
  static Result<Userfaultfd> Open();
  Userfaultfd(Userfaultfd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Userfaultfd& operator=(Userfaultfd&& other) noexcept;
  ~Userfaultfd();

  int fd() const { return fd_; }
  // Registers [addr, addr+len) for missing faults, and write-protect faults
  // when `write_protect`.
  Status Register(void* addr, size_t len, bool write_protect);
  Status Unregister(void* addr, size_t len);
  // Installs `len` bytes from `src` at `dst` (page-aligned), write-protected
  // when `write_protect`, and wakes the threads waiting there.
  // AlreadyExists if a page there is present already (then they are woken).
  Status Copy(void* dst, const void* src, size_t len, bool write_protect);
  // Sets or clears write protection of present pages; clearing wakes the
  // threads waiting there.
  Status WriteProtect(void* addr, size_t len, bool protect);
  // Wakes the threads waiting on faults in the range (they retry the access).
  Status Wake(void* addr, size_t len);
  // Reads up to `max` pending page-fault messages into `out` (other events
  // are skipped); 0 when none is pending.
  Result<size_t> ReadFaults(UffdFault* out, size_t max);

 private:
  explicit Userfaultfd(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace pulse::farmem
