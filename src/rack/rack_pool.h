// The rack's shared pool, both sides of it (docs/racks.md): the memory node
// that owns a rack's pool object, and the CPU nodes of the same rack that map
// it and read and write it by plain loads and stores (the CXL tier of seed
// 004, emulated by a POSIX shared-memory object on one host).
//
// Liveness without messages.  A CPU node must never serve reads from the
// mapping of a memory node that died (its object may have been replaced, or
// will be re-attached by a new process with other state).  The pool object
// ends with an owner page: a random token, a "closed" word, and a robust,
// process-shared mutex the memory node's serving thread locks for its whole
// life.  When that thread or process dies, the kernel marks the mutex
// owner-died (robust futex list) even on SIGKILL; a clean exit sets
// "closed".  So a CPU node checks liveness with three plain loads
// (PoolMapping::Alive), after each copy: a copy that overlapped a death is
// detected and not returned.
//
// Thread-safety: PoolOwner is used by the thread that claimed it (its
// destructor must run on that thread to release the lock; on another thread
// the page is still marked closed).  PoolMapping::Alive and data() may be
// called from any thread; Map and the destructor are not synchronised.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse::rack {

// Bytes of the owner page at the end of a pool object.
inline constexpr size_t kOwnerPageBytes = 4096;

// The memory node's side: initialises the owner page and holds its lock.
class PoolOwner {
 public:
  // Writes a fresh token into the owner page at `page` (kOwnerPageBytes of a
  // MAP_SHARED mapping that outlives this object), (re)initialises its
  // robust mutex (a page left by a dead process is taken over) and locks it
  // on the calling thread.  Errors: Internal naming the pthread call.
  static Result<std::unique_ptr<PoolOwner>> Claim(void* page);
  // Marks the page closed and releases the lock.
  ~PoolOwner();
  PoolOwner(const PoolOwner&) = delete;
  PoolOwner& operator=(const PoolOwner&) = delete;

  uint64_t token() const { return token_; }

 private:
  explicit PoolOwner(void* page) : page_(page) {}
  void* page_;
  uint64_t token_ = 0;
  bool locked_ = false;
};

// What a memory node tells a CPU node of its rack about its pool ("rack_pool"
// in its hello answer): the object's name, the pool's data bytes (far
// address base + i is byte i), the object's total size, where the owner
// page is, and the token it must hold.
struct PoolOffer {
  std::string rack;
  std::string shm;
  uint64_t bytes = 0;
  uint64_t object_bytes = 0;
  uint64_t owner_offset = 0;
  uint64_t token = 0;
};
nlohmann::json OfferToJson(const PoolOffer& offer);
// InvalidArgument naming the missing or mistyped field.
Result<PoolOffer> OfferFromJson(const nlohmann::json& j);

// The CPU node's side: the pool mapped read-write.
class PoolMapping {
 public:
  // Opens offer.shm, checks its size and that its owner page holds
  // offer.token with a live owner, and maps it.  Errors: NotFound (no such
  // object here: another host, or gone), FailedPrecondition (another
  // object, or its owner is dead or closed), IoError (open/mmap failed).
  static Result<std::unique_ptr<PoolMapping>> Map(const PoolOffer& offer);
  // Unmaps.
  ~PoolMapping();
  PoolMapping(const PoolMapping&) = delete;
  PoolMapping& operator=(const PoolMapping&) = delete;

  // True while the memory node that offered the pool lives and has not
  // closed it: the bytes read through data() since the last true answer
  // were its pool's.  Three loads, no system call.
  bool Alive() const;
  uint8_t* data() const { return base_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t token() const { return token_; }

 private:
  PoolMapping() = default;
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t object_bytes_ = 0;
  const void* page_ = nullptr;
  uint64_t token_ = 0;
  int owner_tid_ = 0;
};

}  // namespace pulse::rack
