#include "memnode/pool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace pulse::memnode {
namespace {

std::string Errno(int err) { return std::strerror(err); }

}  // namespace

Result<std::unique_ptr<SharedPool>> SharedPool::Create(const std::string& name, size_t bytes) {
  return Open(name, bytes, 0, /*reattach=*/false);
}

Result<std::unique_ptr<SharedPool>> SharedPool::CreateOrReattach(const std::string& name, size_t bytes,
                                                                 size_t meta_bytes) {
  return Open(name, bytes, meta_bytes, /*reattach=*/true);
}

Result<std::unique_ptr<SharedPool>> SharedPool::Open(const std::string& name, size_t bytes, size_t meta_bytes,
                                                     bool reattach) {
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos)
    return Status::InvalidArgument(
        fmt::format("shared-memory name '{}' must be '/' followed by a name without '/'", name));
  if (bytes == 0) return Status::InvalidArgument("pool size must be positive");

  std::unique_ptr<SharedPool> pool(new SharedPool());
  const size_t total = bytes + meta_bytes + rack::TrailerBytes(bytes);
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    // Whoever created it holds its lock while alive.
    int old = shm_open(name.c_str(), O_RDWR, 0);
    if (old >= 0 && flock(old, LOCK_EX | LOCK_NB) != 0) {
      close(old);
      return Status::IoError(fmt::format("shared-memory object '{}' is in use by a running process", name));
    }
    struct stat st {};
    if (old >= 0 && reattach && fstat(old, &st) == 0 && static_cast<size_t>(st.st_size) == total) {
      fd = old;  // locked by us now: the dead node's pool, contents kept
      pool->reattached_ = true;
    } else {
      if (old >= 0) close(old);
      shm_unlink(name.c_str());
      pool->replaced_stale_ = true;
      fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    }
  }
  if (fd < 0) return Status::IoError(fmt::format("shm_open '{}': {}", name, Errno(errno)));
  // From here on the object is ours: the destructor unlinks it.
  pool->name_ = name;
  pool->fd_ = fd;
  auto fail = [&](const std::string& what) -> Status {
    return Status::IoError(fmt::format("{} '{}' ({} bytes): {}", what, name, bytes, Errno(errno)));
  };
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) return fail("flock");
  if (!pool->reattached_ && ftruncate(fd, static_cast<off_t>(total)) != 0) return fail("ftruncate");
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail("mmap");
  pool->data_ = static_cast<uint8_t*>(p);
  pool->size_ = bytes;
  pool->meta_size_ = meta_bytes;
  pool->huge_advised_ = madvise(p, bytes, MADV_HUGEPAGE) == 0;
  PULSE_ASSIGN_OR_RETURN(pool->owner_, rack::PoolOwner::Claim(pool->data_ + bytes + meta_bytes));
  pool->gates_ = rack::FrameGates(pool->data_ + bytes + meta_bytes + rack::kOwnerPageBytes, bytes);
  pool->gates_.OpenAll();  // a dead owner's move ended with it
  return pool;
}

SharedPool::~SharedPool() {
  owner_.reset();  // CPU nodes stop using their mappings
  if (data_ != nullptr) munmap(data_, size_ + meta_size_ + rack::TrailerBytes(size_));
  if (!name_.empty()) shm_unlink(name_.c_str());
  if (fd_ >= 0) close(fd_);
}

rack::PoolOffer SharedPool::Offer(const std::string& rack) const {
  return rack::PoolOffer{.rack = rack,
                         .shm = name_,
                         .bytes = size_,
                         .object_bytes = size_ + meta_size_ + rack::TrailerBytes(size_),
                         .owner_offset = size_ + meta_size_,
                         .token = owner_ != nullptr ? owner_->token() : 0};
}

void SharedPool::Scrub(size_t offset, size_t length) {
  if (offset >= size_ || length == 0) return;
  if (length > size_ - offset) length = size_ - offset;
  std::memset(data_ + offset, 0, length);
}

}  // namespace pulse::memnode
