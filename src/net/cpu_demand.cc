// ReadCpuDemand: the machine's instantaneous CPU demand for the idle-core
// polling rule (WorkerOptions::poll_when_core_idle).
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "pulse/net.h"

namespace pulse::net {

namespace {

// /proc/loadavg stays open: re-reading it from offset 0 regenerates it, so
// a read costs one pread instead of open + read + close.
int LoadavgFd() {
  static const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  return fd;
}

// The running-or-queued thread count: "0.50 1.24 2.01 3/456 12345" -> 3.
uint32_t ReadRunnable() {
  const int fd = LoadavgFd();
  if (fd < 0) return UINT32_MAX;
  char buf[128];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return UINT32_MAX;
  buf[n] = '\0';
  const char* slash = std::strchr(buf, '/');
  if (slash == nullptr) return UINT32_MAX;
  const char* p = slash;
  while (p > buf && p[-1] >= '0' && p[-1] <= '9') --p;
  if (p == slash) return UINT32_MAX;
  return static_cast<uint32_t>(std::strtoul(p, nullptr, 10));
}

uint32_t AllowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? static_cast<uint32_t>(n) : 1;
}

}  // namespace

CpuDemand ReadCpuDemand() {
  // The affinity mask of a node does not change while it runs.
  static const uint32_t cores = AllowedCores();
  CpuDemand d;
  d.runnable = ReadRunnable();
  d.cores = cores;
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0) d.preemptions = static_cast<uint64_t>(ru.ru_nivcsw);
  return d;
}

}  // namespace pulse::net
