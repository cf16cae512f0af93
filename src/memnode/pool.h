// The memory node's pool: one named POSIX shared-memory object mapped
// MAP_SHARED.  Naming it (instead of anonymous memory) lets a later tier map
// the same pages directly from CPU-node processes on the same host (the
// rack-local shared pool of seed 004: src/rack/rack_pool.h, docs/racks.md).
// The object ends with the rack owner page (rack::kOwnerPageBytes after the
// metadata), which the creating thread claims: CPU nodes of the rack that
// map the object learn from it, with plain loads, whether this process
// still owns it.  The frames' gates follow it (rack::TrailerBytes).  Huge pages are asked for with
// madvise(MADV_HUGEPAGE), best effort: shmem THP depends on
// /sys/kernel/mm/transparent_hugepage/shmem_enabled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pulse/status.h"
#include "rack/rack_pool.h"

namespace pulse::memnode {

class SharedPool {
 public:
  // Creates the object `name` ("/name", as for shm_open) of `bytes` bytes,
  // zero-filled, maps it, and holds an exclusive flock on it for the life of
  // the pool.  An object of that name whose lock is free was left by a
  // process that died: it is unlinked and created afresh (replaced_stale()).
  // One whose lock is held belongs to a live process: kIoError naming it.
  static Result<std::unique_ptr<SharedPool>> Create(const std::string& name, size_t bytes);
  // As Create, with `meta_bytes` more bytes after the pool in the same
  // object (metadata(): not part of data(), for the node's own records), and
  // one difference: an object left by a process that died is re-attached,
  // contents kept (reattached()), if its size is bytes + meta_bytes; one of
  // another size is replaced.  This is how a memory node restarted after a
  // crash gets its data back.
  static Result<std::unique_ptr<SharedPool>> CreateOrReattach(const std::string& name, size_t bytes,
                                                              size_t meta_bytes);
  // Marks the owner page closed, unmaps and unlinks the object.  Runs on
  // the thread that created the pool (it holds the owner page's lock).
  ~SharedPool();
  SharedPool(const SharedPool&) = delete;
  SharedPool& operator=(const SharedPool&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // True if madvise(MADV_HUGEPAGE) was accepted (the kernel may still use
  // small pages for shared memory).
  bool huge_pages_advised() const { return huge_advised_; }
  // True if the object was left over by a process that did not exit cleanly.
  bool replaced_stale() const { return replaced_stale_; }
  // True if CreateOrReattach kept a dead process's object and its bytes.
  bool reattached() const { return reattached_; }
  // The metadata area of CreateOrReattach (empty for Create).
  uint8_t* metadata() const { return data_ + size_; }
  size_t metadata_size() const { return meta_size_; }

  // The frames' gates (rack/rack_pool.h), after the owner page.
  rack::FrameGates& gates() { return gates_; }
  // What a CPU node of `rack` needs to map the pool (rack/rack_pool.h).
  rack::PoolOffer Offer(const std::string& rack) const;

  // Returns [offset, offset+length) to zeroes, so that the next owner of
  // the bytes never sees the previous one's data.  A plain memset: dropping
  // the pages (MADV_REMOVE) would be cheaper but is unsafe while the pool is
  // registered for RDMA (the NIC keeps the old, pinned pages).
  void Scrub(size_t offset, size_t length);

 private:
  SharedPool() = default;
  static Result<std::unique_ptr<SharedPool>> Open(const std::string& name, size_t bytes, size_t meta_bytes,
                                                  bool reattach);
  std::string name_;
  int fd_ = -1;  // holds the lock
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t meta_size_ = 0;
  bool huge_advised_ = false;
  bool replaced_stale_ = false;
  bool reattached_ = false;
  std::unique_ptr<rack::PoolOwner> owner_;  // in the page after the metadata
  rack::FrameGates gates_;                  // after the owner page
};

}  // namespace pulse::memnode
