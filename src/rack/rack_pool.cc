#include "rack/rack_pool.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>

namespace pulse::rack {
namespace {

constexpr uint64_t kMagic = 0x6c6f6f506b636152ull;  // "RackPool"

// The owner page.  Its mutex's lock word holds the owner thread's id while
// it lives (glibc: __data.__lock, the futex word); the kernel replaces it
// with FUTEX_OWNER_DIED when that thread dies holding it.
struct OwnerPage {
  uint64_t magic;
  uint64_t token;
  uint32_t closed;
  uint32_t reserved;
  pthread_mutex_t mutex;
};
static_assert(sizeof(OwnerPage) <= kOwnerPageBytes);

uint64_t LoadU64(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
uint32_t LoadU32(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
// The owner's thread id, with FUTEX_OWNER_DIED if it died (waiters ignored).
int OwnerWord(const OwnerPage* page) {
  return __atomic_load_n(&page->mutex.__data.__lock, __ATOMIC_ACQUIRE) & (FUTEX_TID_MASK | FUTEX_OWNER_DIED);
}

uint64_t NewToken() {
  std::random_device entropy;
  uint64_t t = 0;
  while (t == 0) t = (static_cast<uint64_t>(entropy()) << 32) ^ entropy();
  return t;
}

constexpr uint64_t kMinPageBytes = 4096;
// A gate's state word: accesses in progress in the low 32 bits, closed above.
constexpr uint64_t kGateClosed = uint64_t{1} << 32;
constexpr uint64_t kGateCount = kGateClosed - 1;

}  // namespace

struct FrameGates::Gate {
  std::atomic<uint64_t> state;
  std::atomic<uint64_t> holds;
};
static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free);

uint64_t TrailerBytes(uint64_t pool_bytes) {
  const uint64_t gates = pool_bytes / kMinPageBytes * 16;
  return kOwnerPageBytes + (gates + kMinPageBytes - 1) / kMinPageBytes * kMinPageBytes;
}

FrameGates::FrameGates(void* area, uint64_t pool_bytes)
    : gates_(static_cast<Gate*>(area)), count_(pool_bytes / kMinPageBytes) {}

// Enter and Close are the two sides of Dekker's exchange: each changes its
// word and then reads the other's (all sequentially consistent), so either
// the access sees the gate closed or the mover sees the access in.
bool FrameGates::Enter(uint64_t frame, uint64_t holds) {
  if (frame >= count_) return false;
  Gate& g = gates_[frame];
  const uint64_t before = g.state.fetch_add(1);
  if ((before & kGateClosed) == 0 && g.holds.load() == holds) return true;
  g.state.fetch_sub(1);
  return false;
}

void FrameGates::Leave(uint64_t frame) { gates_[frame].state.fetch_sub(1); }

bool FrameGates::Close(uint64_t frame, std::chrono::milliseconds timeout) {
  if (frame >= count_) return false;
  Gate& g = gates_[frame];
  g.state.fetch_or(kGateClosed);
  // A copy in progress is a memcpy of at most a page: microseconds, unless
  // its process stopped or died inside it (then the move fails, bounded).
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while ((g.state.load() & kGateCount) != 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      g.state.fetch_and(~kGateClosed);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

void FrameGates::Open(uint64_t frame, uint64_t holds) {
  if (frame >= count_) return;
  gates_[frame].holds.store(holds);
  gates_[frame].state.fetch_and(~kGateClosed);
}

void FrameGates::OpenAll() {
  for (uint64_t i = 0; i < count_; ++i) gates_[i].state.fetch_and(~kGateClosed);
}

Result<std::unique_ptr<PoolOwner>> PoolOwner::Claim(void* raw) {
  auto* page = static_cast<OwnerPage*>(raw);
  std::unique_ptr<PoolOwner> owner(new PoolOwner(raw));
  // Mappings of a previous owner stop trusting the page before it changes.
  __atomic_store_n(&page->closed, 1u, __ATOMIC_RELEASE);
  __atomic_store_n(&page->token, uint64_t{0}, __ATOMIC_RELEASE);
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  int rc = pthread_mutex_init(&page->mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc != 0) return Status::Internal(fmt::format("rack pool: pthread_mutex_init: {}", std::strerror(rc)));
  if ((rc = pthread_mutex_lock(&page->mutex)) != 0)
    return Status::Internal(fmt::format("rack pool: pthread_mutex_lock: {}", std::strerror(rc)));
  owner->locked_ = true;
  owner->token_ = NewToken();
  page->magic = kMagic;
  __atomic_store_n(&page->token, owner->token_, __ATOMIC_RELEASE);
  __atomic_store_n(&page->closed, 0u, __ATOMIC_RELEASE);
  return owner;
}

PoolOwner::~PoolOwner() {
  auto* page = static_cast<OwnerPage*>(page_);
  __atomic_store_n(&page->closed, 1u, __ATOMIC_RELEASE);
  if (locked_) (void)pthread_mutex_unlock(&page->mutex);  // EPERM on another thread: "closed" says it
}

nlohmann::json OfferToJson(const PoolOffer& o) {
  return nlohmann::json{{"rack", o.rack},
                        {"shm", o.shm},
                        {"bytes", o.bytes},
                        {"object_bytes", o.object_bytes},
                        {"owner_offset", o.owner_offset},
                        {"token", o.token}};
}

Result<PoolOffer> OfferFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("rack_pool: not an object");
  PoolOffer o;
  for (const char* key : {"rack", "shm"})
    if (!j.contains(key) || !j[key].is_string())
      return Status::InvalidArgument(fmt::format("rack_pool.{}: expected a string", key));
  for (const char* key : {"bytes", "object_bytes", "owner_offset", "token"})
    if (!j.contains(key) || !j[key].is_number_unsigned())
      return Status::InvalidArgument(fmt::format("rack_pool.{}: expected an unsigned integer", key));
  o.rack = j["rack"].get<std::string>();
  o.shm = j["shm"].get<std::string>();
  o.bytes = j["bytes"].get<uint64_t>();
  o.object_bytes = j["object_bytes"].get<uint64_t>();
  o.owner_offset = j["owner_offset"].get<uint64_t>();
  o.token = j["token"].get<uint64_t>();
  if (o.bytes > o.owner_offset || o.owner_offset > o.object_bytes ||
      o.object_bytes - o.owner_offset < kOwnerPageBytes)
    return Status::InvalidArgument(
        fmt::format("rack_pool: bytes {} / owner_offset {} / object_bytes {} do not fit together", o.bytes,
                    o.owner_offset, o.object_bytes));
  return o;
}

Result<std::unique_ptr<PoolMapping>> PoolMapping::Map(const PoolOffer& offer) {
  int fd = shm_open(offer.shm.c_str(), O_RDWR, 0);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("rack pool {}: no such object on this host", offer.shm));
    return Status::IoError(fmt::format("rack pool {}: shm_open: {}", offer.shm, std::strerror(errno)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != offer.object_bytes) {
    close(fd);
    return Status::FailedPrecondition(
        fmt::format("rack pool {}: the object here is not {} bytes (another host's pool?)", offer.shm,
                    offer.object_bytes));
  }
  void* p = mmap(nullptr, offer.object_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);  // the mapping keeps the object
  if (p == MAP_FAILED) return Status::IoError(fmt::format("rack pool {}: mmap: {}", offer.shm, std::strerror(err)));
  std::unique_ptr<PoolMapping> m(new PoolMapping());
  m->base_ = static_cast<uint8_t*>(p);
  m->bytes_ = offer.bytes;
  m->object_bytes_ = offer.object_bytes;
  m->page_ = m->base_ + offer.owner_offset;
  m->token_ = offer.token;
  if (offer.object_bytes - offer.owner_offset < TrailerBytes(offer.bytes))
    return Status::FailedPrecondition(
        fmt::format("rack pool {}: the object has no frame gates after its owner page", offer.shm));
  m->gates_ = FrameGates(m->base_ + offer.owner_offset + kOwnerPageBytes, offer.bytes);
  const auto* page = static_cast<const OwnerPage*>(m->page_);
  const int word = OwnerWord(page);
  if (page->magic != kMagic || LoadU64(&page->token) != offer.token || LoadU32(&page->closed) != 0 ||
      (word & FUTEX_OWNER_DIED) != 0 || word == 0)
    return Status::FailedPrecondition(
        fmt::format("rack pool {}: not the offered pool, or its memory node is gone", offer.shm));
  m->owner_tid_ = word;
  return m;
}

PoolMapping::~PoolMapping() {
  if (base_ != nullptr) munmap(base_, object_bytes_);
}

bool PoolMapping::Alive() const {
  const auto* page = static_cast<const OwnerPage*>(page_);
  return LoadU32(&page->closed) == 0 && LoadU64(&page->token) == token_ && OwnerWord(page) == owner_tid_;
}

}  // namespace pulse::rack
