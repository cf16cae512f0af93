// The write buffer and page cache under FarLock holds (seed 004 section
// 5.4; LockTierOptions in include/pulse/client.h; docs/tier.md).
//
// OneSidedAccess hands this class the accesses that cross the fabric while
// the client holds a lock (Client::EnterLock / LeaveLock):
//   - under an exclusive hold, small writes go into a tier::WriteBuffer
//     (pulse/tier/write_buffer.h), which is written out in batches of
//     one-sided writes posted without waiting: when it reaches its size, and
//     all of it, waited for, at release; reads see the buffer (far bytes,
//     then the buffered bytes over them; no far read at all when the buffer
//     holds every byte asked for);
//   - under shared holds only, a BlockCache (src/client/cache.h, LRU,
//     write-through, with an admission filter) caches the blocks that this
//     client's own reads made read-hot (tier::HotnessTracker with the
//     client's hotness thresholds).  Every write drops it (and counts as a
//     write to the block's heat), as do a release and an acquisition.
//
// Not thread-safe: it belongs to its Client's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "client/cache.h"
#include "pulse/client.h"
#include "pulse/tier/hotness.h"
#include "pulse/tier/write_buffer.h"

namespace pulse {

class LockTier {
 public:
  // Far memory below: a one-sided read and write (waited for), a write
  // posted without waiting (`keep` holds `src` alive until it is done), and
  // the wait for every posted write to be visible at its node (the first
  // error of any of them).
  struct Far {
    std::function<Status(uint64_t addr, void* dst, size_t len)> read;
    std::function<Status(uint64_t addr, const void* src, size_t len)> write;
    std::function<Status(uint64_t addr, const void* src, size_t len, std::shared_ptr<const void> keep)> post;
    std::function<Status()> wait;
  };

  // `options` valid (CheckLockTierOptions), `hotness` valid; `counters`
  // (the client's) must outlive this.
  LockTier(const LockTierOptions& options, const tier::HotnessParams& hotness, Far far, ClientCounters* counters);

  // Holds taken and released (Client::EnterLock, LeaveLock, AbandonLock).
  void Enter(bool exclusive);
  Status Leave(bool exclusive);
  void Abandon(bool exclusive);

  // True while some hold is taken or buffered bytes remain: the accesses
  // that cross the fabric come here.
  bool holding() const { return exclusive_ + shared_ > 0 || !buffer_.empty(); }
  // True if a write of `len` bytes is one to buffer now.
  bool BuffersWrite(size_t len) const { return exclusive_ > 0 && buffer_.Buffers(len); }
  bool Overlaps(uint64_t addr, size_t len) const { return !buffer_.empty() && buffer_.Overlaps(addr, len); }
  // Puts buffered bytes over a read of [addr, addr + len) served elsewhere
  // (the rack tier).
  void Overlay(uint64_t addr, void* dst, size_t len) const {
    if (!buffer_.empty()) buffer_.Overlay(addr, dst, len);
  }

  // A write the caller checked (every byte in an allocation of this
  // tenant) and BuffersWrite accepted: kept, and a flush started if one is
  // due (after waiting for the batch in flight).  Errors: those of that
  // earlier batch (this write stays buffered).
  Status Buffer(uint64_t addr, const void* src, size_t len);
  // Before any other write of [addr, addr + len): writes the buffer out
  // (waited for) if it holds bytes of the range, and drops the page cache.
  // Errors: those of the buffer's writes.
  Status BeforeWrite(uint64_t addr, size_t len);
  // A read of [addr, addr + len) that crosses the fabric while holding().
  Status Read(uint64_t addr, void* dst, size_t len);
  // Writes every buffered byte out and waits (before an offloaded traversal
  // and at release).  Errors: the first failed write (the batch is dropped
  // and counted in lock_buffer_dropped_bytes).
  Status Drain();
  // Drops the page cache.
  void DropCache();

  // The page cache's own hit / miss counts (its BlockCache counts into
  // this; Client::counters() copies them into lock_cache_hits / misses).
  const ClientCounters& cache_counters() const { return cache_counters_; }

 private:
  // Posts the pending bytes as one batch (none in flight: WaitFlush first).
  Status StartFlush();
  // Waits for the batch in flight, if any, and forgets it.
  Status WaitFlush();

  LockTierOptions options_;
  Far far_;
  ClientCounters* counters_;
  tier::WriteBuffer buffer_;
  Status post_error_;  // of the batch in flight
  uint64_t in_flight_bytes_ = 0;
  tier::SteadyClock clock_;
  tier::HotnessTracker heat_;  // of cache_page_bytes blocks, this client's reads and writes under holds
  ClientCounters cache_counters_;
  std::unique_ptr<BlockCache> cache_;  // null: page cache off
  int exclusive_ = 0, shared_ = 0;  // holds taken
};

// InvalidArgument naming the field unless cache_page_bytes is a power of
// two >= 8, cache_pages >= 1 and write_buffer_bytes >= 1.
Status CheckLockTierOptions(const LockTierOptions& options);

}  // namespace pulse
