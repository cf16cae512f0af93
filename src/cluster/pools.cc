#include "cluster/pools.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace pulse::cluster {
namespace {

// Where glibc's shm_open keeps "/name".
constexpr const char* kShmDir = "/dev/shm";

std::string PathOf(const std::string& shm_name) { return std::string(kShmDir) + shm_name; }

// The holder of a lock on (dev, ino) per /proc/locks, whose lines read
//   "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"
// (a waiter has "->" after the number and holds nothing).  false with
// *readable = false if the file cannot be read.
bool LockHolder(dev_t dev, ino_t ino, pid_t* holder, bool* readable) {
  std::ifstream in("/proc/locks");
  *readable = static_cast<bool>(in);
  if (!in) return false;
  const std::string wanted_dev = fmt::format("{:02x}:{:02x}", major(dev), minor(dev));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string number, kind, mode, access, pid, id;
    if (!(fields >> number >> kind)) continue;
    if (kind == "->") continue;
    if (!(fields >> mode >> access >> pid >> id)) continue;
    const size_t last = id.rfind(':');
    if (last == std::string::npos || id.substr(0, last) != wanted_dev) continue;
    if (std::strtoull(id.c_str() + last + 1, nullptr, 10) != static_cast<unsigned long long>(ino)) continue;
    *holder = static_cast<pid_t>(std::strtol(pid.c_str(), nullptr, 10));
    return true;
  }
  return false;
}

}  // namespace

PoolUse PoolUseOf(const std::string& shm_name) {
  PoolUse use;
  struct stat st {};
  if (shm_name.size() < 2 || shm_name[0] != '/' || stat(PathOf(shm_name).c_str(), &st) != 0) return use;
  use.exists = true;
  use.bytes = static_cast<uint64_t>(st.st_size);
  bool readable = false;
  pid_t holder = 0;
  if (LockHolder(st.st_dev, st.st_ino, &holder, &readable)) {
    use.in_use = true;
    use.user = holder;
  } else if (!readable) {
    use.in_use = true;  // cannot tell: never remove it
  }
  return use;
}

Result<std::vector<PoolInfo>> ListPools(const std::string& prefix) {
  DIR* dir = opendir(kShmDir);
  if (dir == nullptr) return Status::IoError(fmt::format("cannot list {}: {}", kShmDir, strerror(errno)));
  std::vector<PoolInfo> pools;
  while (const dirent* e = readdir(dir)) {
    const std::string name = std::string("/") + e->d_name;
    if (!name.starts_with(prefix) || name == "/." || name == "/..") continue;
    PoolInfo p{name, PoolUseOf(name)};
    if (p.use.exists) pools.push_back(std::move(p));
  }
  closedir(dir);
  std::sort(pools.begin(), pools.end(), [](const PoolInfo& a, const PoolInfo& b) { return a.name < b.name; });
  return pools;
}

Status RemoveUnusedPool(const std::string& shm_name) {
  const PoolUse use = PoolUseOf(shm_name);
  if (!use.exists) return Status::NotFound(fmt::format("no pool {}", shm_name));
  if (use.in_use)
    return Status::FailedPrecondition(
        use.user > 0 ? fmt::format("pool {} is in use by pid {}", shm_name, use.user)
                     : fmt::format("pool {} may be in use (/proc/locks cannot be read)", shm_name));
  if (shm_unlink(shm_name.c_str()) != 0)
    return Status::IoError(fmt::format("cannot remove pool {}: {}", shm_name, strerror(errno)));
  return Status::Ok();
}

}  // namespace pulse::cluster
