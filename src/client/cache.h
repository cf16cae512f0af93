// The CPU node's cache of far memory (AIFM-like, transparent to the data
// structures): aligned blocks of far memory kept here within a byte budget.
// pulse::Client routes Read/Write and the windows of CPU-node traversals
// through it, and runs offloaded traversals over it until their first
// uncached window (include/pulse/client.h, CacheOptions).
//
// Blocks are `block_bytes` long and aligned to it (a 256-byte traversal
// window for CacheGranularity::kObject, a 4 KiB page for kPage).  A miss
// fetches the whole block.  Eviction is LRU or CLOCK.  Write-back mode
// keeps writes in the cache (fetching a block first unless the write covers
// it) until eviction or Flush(), and then writes back only the bytes written,
// not the whole block: the rest of it may be stale by then, and writing it
// would undo another CPU node's writes to other data in the same block
// (e.g. data under another FarLock).  Write-through mode writes far memory
// at once and updates only blocks that are already cached.
//
// Not thread-safe: owned by one Client, used on its thread.  Re-entrant in
// one way: Invalidate() may be called from inside the fetch or store of an
// access in progress.  The client's network handlers run while its fetch or
// store waits in the fabric (net::Worker::Get/Put progress it), and the
// answer of a STORE-bearing traversal invalidates the cache from there
// (TraversalTracker -> StoresDone).  Such an invalidation does nothing then
// (a block the access holds must not be freed under it, and a handler may
// not write blocks back): it is owed, and done before the next access uses
// the cache.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse {

class BlockCache {
 public:
  // Far memory below the cache: one-sided read / write of [addr, addr+len).
  using FetchFn = std::function<Status(uint64_t addr, void* dst, size_t len)>;
  using StoreFn = std::function<Status(uint64_t addr, const void* src, size_t len)>;

  // `counters` (the client's) receives cache_hits/misses/bytes, evictions
  // and writebacks; it must outlive the cache.
  BlockCache(const CacheOptions& options, FetchFn fetch, StoreFn store, ClientCounters* counters);

  // Which blocks a miss may bring in: with a filter set, a miss on a block
  // it refuses reads just the bytes asked for and caches nothing (the lock
  // tier's page cache admits read-hot pages only, src/client/lock_tier.h).
  // Called once per miss, with the block's far address.
  using AdmitFn = std::function<bool(uint64_t block)>;
  void SetAdmission(AdmitFn admit) { admit_ = std::move(admit); }

  bool enabled() const { return capacity_ > 0; }
  uint32_t block_bytes() const { return block_; }

  // Read and Write do an owed invalidation (see above) before each block
  // they use; its errors are those of the write-back (it stays owed then).
  //
  // Copies [addr, addr+len) out of the cache, fetching missing blocks.
  // Errors: those of the fetch (then nothing is cached for the range).
  Status Read(uint64_t addr, void* dst, size_t len);
  // Writes [addr, addr+len) through the cache (see the write policy).
  Status Write(uint64_t addr, const void* src, size_t len);
  // Copies [addr, addr+len) if every block of it is cached (counting hits)
  // and returns true; returns false without fetching anything otherwise,
  // and while an invalidation is owed.
  bool ReadIfCached(uint64_t addr, void* dst, size_t len);
  // Writes every dirty block back (and does an owed invalidation).  Errors:
  // the first failed write (the block stays dirty).
  Status Flush();
  // Flush(), then drop every block.  Called from inside an access's fetch
  // or store: owed (see above), OK.  Errors: those of Flush (the
  // invalidation stays owed: no block is used until it is done).
  Status Invalidate();
  bool has_dirty() const { return dirty_ > 0; }

 private:
  struct Block {
    std::unique_ptr<uint8_t[]> data;
    bool dirty = false;
    std::vector<uint8_t> written;         // while dirty: 1 for each byte written since the last write-back
    bool referenced = false;              // CLOCK
    std::list<uint64_t>::iterator lru;    // LRU: position in lru_
    size_t slot = 0;                      // CLOCK: position in ring_
  };
  uint64_t BlockOf(uint64_t addr) const { return addr & ~uint64_t{block_ - 1}; }
  Block* Find(uint64_t block);
  void Touch(uint64_t block, Block& b);
  // The cached block, counted as a hit, or on a miss a newly inserted one,
  // fetched unless `whole` (the caller overwrites all of it); nullptr if
  // the admission filter refused it, or if
  // the fetch failed (nothing is cached for it then).
  Result<Block*> Lookup(uint64_t block, bool whole);
  // Makes room for one block and inserts it (data uninitialised).
  Result<Block*> Insert(uint64_t block);
  Status Evict();
  // Removes a block (its data is lost: write it back first if dirty).
  void Forget(uint64_t block, Block& b);
  Status WriteBack(uint64_t block, Block& b);
  // Does an owed invalidation, if any.
  Status SettleInvalidation();
  // Marks an access in progress for its lifetime (busy_).
  class AccessScope {
   public:
    explicit AccessScope(BlockCache* cache) : cache_(cache) { ++cache_->busy_; }
    ~AccessScope() { --cache_->busy_; }
    AccessScope(const AccessScope&) = delete;
    AccessScope& operator=(const AccessScope&) = delete;

   private:
    BlockCache* cache_;
  };

  CacheOptions options_;
  FetchFn fetch_;
  StoreFn store_;
  AdmitFn admit_;  // empty: every miss is cached
  ClientCounters* counters_;
  uint32_t block_;
  size_t capacity_;  // blocks
  std::unordered_map<uint64_t, Block> blocks_;
  std::list<uint64_t> lru_;        // most recent first
  std::vector<uint64_t> ring_;     // CLOCK slots (0: empty)
  size_t hand_ = 0;
  size_t dirty_ = 0;
  int busy_ = 0;              // accesses in progress (more than one: re-entered from a fetch or store)
  bool owes_invalidation_ = false;
};

}  // namespace pulse
