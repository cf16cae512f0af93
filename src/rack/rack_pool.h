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
// Frame gates (docs/tier.md "Moving a page that holds allocations").  After
// the owner page comes one gate per possible frame (a frame is a page of the
// pool; pages are at least 4 KB, so pool bytes / 4096 gates): a count of the
// rack's accesses in progress, a "closed" bit and the page the frame holds
// (0: its own, else a moved page's id + 1).  A CPU node enters the gate of
// the frame it copies to or from, expecting the page its directory says,
// and leaves after the copy; the memory node closes a gate before moving the
// frame's page and waits for the accesses in it to leave, so that no load or
// store of the rack reaches a page while its bytes travel.
//
// Thread-safety: PoolOwner is used by the thread that claimed it (its
// destructor must run on that thread to release the lock; on another thread
// the page is still marked closed).  PoolMapping::Alive, data() and
// FrameGates may be used from any thread of any process mapping the object;
// Map and the destructor are not synchronised.
#pragma once

#include <pthread.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse::rack {

// Bytes of the owner page at the end of a pool object.
inline constexpr size_t kOwnerPageBytes = 4096;

// Bytes after the pool's metadata: the owner page, then the frame gates of
// a pool of `pool_bytes` (rounded up to whole 4 KB pages).
uint64_t TrailerBytes(uint64_t pool_bytes);

// The gates of a pool's frames, over memory of the object (see above).
class FrameGates {
 public:
  FrameGates() = default;
  // `area`: TrailerBytes(pool_bytes) - kOwnerPageBytes bytes after the owner page.
  FrameGates(void* area, uint64_t pool_bytes);

  // What a gate says its frame holds (Enter's `holds`, Open's): 0 its own
  // page, else the page's id + 1; kNoPage (~0) as the page: none.
  static constexpr uint64_t kNoPage = ~uint64_t{0};
  static uint64_t Holds(bool home, uint64_t page) { return home ? 0 : page == kNoPage ? kNoPage : page + 1; }

  bool valid() const { return gates_ != nullptr; }
  uint64_t count() const { return count_; }

  // CPU node: enters `frame` if its gate is open and it holds `holds` (0:
  // its own page, else page id + 1); false (nothing entered) otherwise or if
  // `frame` is out of range.  Leave once after each true Enter.
  bool Enter(uint64_t frame, uint64_t holds);
  void Leave(uint64_t frame);

  // Memory node: closes `frame`'s gate and waits until every access in it
  // has left, at most `timeout`.  False on timeout (the gate is open again).
  bool Close(uint64_t frame, std::chrono::milliseconds timeout);
  // Memory node: `frame` holds `holds` now; its gate opens.
  void Open(uint64_t frame, uint64_t holds);
  // Memory node, at start: every gate open (nothing is being moved), what
  // each frame holds kept.
  void OpenAll();

 private:
  struct Gate;
  Gate* gates_ = nullptr;
  uint64_t count_ = 0;
};

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
  FrameGates& gates() { return gates_; }
  uint64_t token() const { return token_; }

 private:
  PoolMapping() = default;
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t object_bytes_ = 0;
  const void* page_ = nullptr;
  uint64_t token_ = 0;
  int owner_tid_ = 0;
  FrameGates gates_;
};

}  // namespace pulse::rack
