#include "farmem/userfaultfd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

namespace pulse::farmem {
namespace {

Status Errno(const char* what) { return Status::IoError(fmt::format("userfaultfd {}: {}", what, std::strerror(errno))); }

uffdio_range Range(void* addr, size_t len) {
  return uffdio_range{reinterpret_cast<uint64_t>(addr), static_cast<uint64_t>(len)};
}

}  // namespace

Result<Userfaultfd> Userfaultfd::Open() {
  // The syscall needs privilege unless vm.unprivileged_userfaultfd is 1;
  // /dev/userfaultfd (Linux 6.1+) is the other way in, checked by its mode.
  int fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (fd < 0) {
    const int syscall_errno = errno;
#ifdef USERFAULTFD_IOC_NEW
    int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev >= 0) {
      fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
      close(dev);
    }
#endif
    if (fd < 0) {
      return Status::Unavailable(fmt::format(
          "userfaultfd: {} (run as root, with CAP_SYS_PTRACE, or set /proc/sys/vm/unprivileged_userfaultfd to 1)",
          std::strerror(syscall_errno)));
    }
  }
  Userfaultfd u(fd);
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP;
  if (ioctl(fd, UFFDIO_API, &api) != 0) {
    return Status::Unavailable(fmt::format("userfaultfd: this kernel does not offer write-protect faults "
                                           "(UFFD_FEATURE_PAGEFAULT_FLAG_WP): {}",
                                           std::strerror(errno)));
  }
  return u;
}

Userfaultfd& Userfaultfd::operator=(Userfaultfd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Userfaultfd::~Userfaultfd() {
  if (fd_ >= 0) close(fd_);
}

Status Userfaultfd::Register(void* addr, size_t len, bool write_protect) {
  uffdio_register r{};
  r.range = Range(addr, len);
  r.mode = UFFDIO_REGISTER_MODE_MISSING | (write_protect ? UFFDIO_REGISTER_MODE_WP : 0);
  if (ioctl(fd_, UFFDIO_REGISTER, &r) != 0) return Errno("register");
  return Status::Ok();
}

Status Userfaultfd::Unregister(void* addr, size_t len) {
  uffdio_range r = Range(addr, len);
  if (ioctl(fd_, UFFDIO_UNREGISTER, &r) != 0) return Errno("unregister");
  return Status::Ok();
}

Status Userfaultfd::Copy(void* dst, const void* src, size_t len, bool write_protect) {
  uffdio_copy c{};
  c.dst = reinterpret_cast<uint64_t>(dst);
  c.src = reinterpret_cast<uint64_t>(src);
  c.len = len;
  c.mode = write_protect ? UFFDIO_COPY_MODE_WP : 0;
  for (;;) {
    if (ioctl(fd_, UFFDIO_COPY, &c) == 0) return Status::Ok();
    if (errno == EEXIST) {
      IgnoreError(Wake(dst, len));  // the page is there: only the waiters are left to wake
      return Status::AlreadyExists("userfaultfd copy: page present");
    }
    // EAGAIN: the mappings changed under the copy; c.copy says how much went in.
    if (errno != EAGAIN) return Errno("copy");
    if (c.copy > 0) {
      c.dst += c.copy;
      c.src += c.copy;
      c.len -= c.copy;
    }
    c.copy = 0;
  }
}

Status Userfaultfd::WriteProtect(void* addr, size_t len, bool protect) {
  uffdio_writeprotect w{};
  w.range = Range(addr, len);
  w.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
  if (ioctl(fd_, UFFDIO_WRITEPROTECT, &w) != 0) return Errno("write-protect");
  return Status::Ok();
}

Status Userfaultfd::Wake(void* addr, size_t len) {
  uffdio_range r = Range(addr, len);
  if (ioctl(fd_, UFFDIO_WAKE, &r) != 0) return Errno("wake");
  return Status::Ok();
}

Result<size_t> Userfaultfd::ReadFaults(UffdFault* out, size_t max) {
  uffd_msg msgs[64];
  const size_t want = max < 64 ? max : 64;
  const ssize_t n = read(fd_, msgs, want * sizeof(uffd_msg));
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return size_t{0};
    return Errno("read");
  }
  size_t got = 0;
  for (size_t i = 0; i < static_cast<size_t>(n) / sizeof(uffd_msg); ++i) {
    if (msgs[i].event != UFFD_EVENT_PAGEFAULT) continue;
    const auto flags = msgs[i].arg.pagefault.flags;
    out[got++] = UffdFault{msgs[i].arg.pagefault.address, (flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0,
                           (flags & UFFD_PAGEFAULT_FLAG_WP) != 0};
  }
  return got;
}

}  // namespace pulse::farmem
