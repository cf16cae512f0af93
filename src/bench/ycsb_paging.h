// The page cache of `pulse bench ycsb --system paging` (a Fastswap-like
// baseline): far memory as the CPU node sees it when it caches whole 4 KB
// pages and faults them in.  A FarMemory for the reference interpreter
// (InterpretTraversal), so the KV store's own GET program runs at the CPU
// node over it.  A window in a cached page is a memcpy (a hit); otherwise
// the whole page is read by one Client::Read (a fault), the least recently
// used page evicted first and its dirty bytes written back.  A page that
// cannot be read whole (it reaches past an allocation the memory node
// checks) is not cached: the window alone is read (counted as uncached).
//
// Why not the client's own CacheGranularity::kPage cache: on this branch it
// corrupted the heap while kv::Store loaded through it (BlockCache::Write,
// reported); this one is small and the bench owns it.
//
// Thread-safety: none; one per client thread.  `client` must outlive it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "pulse/client.h"
#include "pulse/traversal.h"

namespace pulse::bench {

struct PageCacheCounters {
  uint64_t hits = 0, faults = 0, uncached = 0, evictions = 0, writebacks = 0;
};

class PageCacheMemory : public FarMemory {
 public:
  static constexpr uint64_t kPageBytes = 4096;
  // A cache of at most `capacity_pages` pages (>= 1).
  PageCacheMemory(Client* client, uint64_t capacity_pages);
  ~PageCacheMemory() override = default;

  TraversalStatus ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) override;
  TraversalStatus Store(uint64_t addr, const uint8_t* src, uint32_t len) override;
  // Writes `len` bytes at `addr` into the cached page(s) (faulting them in),
  // or straight to far memory for a page that cannot be cached.  Errors:
  // the client's.
  Status Write(uint64_t addr, const void* src, size_t len);
  // Writes every dirty page's written bytes back.  Errors: the client's.
  Status Flush();

  const PageCacheCounters& counters() const { return counters_; }

 private:
  struct Page {
    std::vector<uint8_t> data;
    uint32_t dirty_begin = 0, dirty_end = 0;  // written bytes [begin, end); empty: clean
    std::list<uint64_t>::iterator lru;
  };
  // The cached page at `page` (faulting it in), or nullptr if it cannot be
  // read whole.  Errors: an eviction's write-back.
  Result<Page*> Get(uint64_t page);
  Status WriteBack(uint64_t page, Page& p);

  Client* client_;
  uint64_t capacity_;
  std::unordered_map<uint64_t, Page> pages_;
  std::list<uint64_t> lru_;  // front: most recent
  PageCacheCounters counters_;
};

}  // namespace pulse::bench
