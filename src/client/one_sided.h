// One-sided access to far memory from the CPU node: reads and writes of a
// memory node's registered memory (net::Worker::Get/Put, re-sent by the
// transport), through the CPU-node cache when one is configured
// (CacheOptions).  A lost memory-node connection is re-established on use
// (Connections::EnsureNode).
//
// Thread-safety: none; it belongs to its Client's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "client/cache.h"
#include "client/connections.h"

namespace pulse {

class OneSidedAccess {
 public:
  // `connections` and `counters` must outlive this.
  OneSidedAccess(Connections* connections, ClientCounters* counters)
      : connections_(connections), counters_(counters) {}

  // Sets up the cache.  InvalidArgument naming the bad size.
  Status EnableCache(const CacheOptions& options);

  // Through the cache if any.  Errors: InvalidArgument (outside every
  // node), Unavailable, Timeout.
  Status Read(uint64_t addr, void* dst, size_t len);
  Status Write(uint64_t addr, const void* src, size_t len);
  // Straight to far memory.
  Status Rma(bool write, uint64_t addr, void* buf, size_t len);

  bool caching() const { return cache_ != nullptr; }
  BlockCache* cache() { return cache_.get(); }  // null without a cache

 private:
  Connections* connections_;
  ClientCounters* counters_;
  std::unique_ptr<BlockCache> cache_;
};

}  // namespace pulse
