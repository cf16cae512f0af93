// The `cache-rpc` baseline, AIFM-like (seed 000 section 6: "a data
// structure-aware cache" at the CPU node plus RPC on a miss): the results of
// lookups are cached by key at the CPU node within a byte budget with LRU
// eviction; a miss is one RPC (include/pulse/rpc_ds.h), whose answer is then
// cached.
//
// What is cached, exactly:
//   CachedUnorderedMap: one object per looked-up key: the hash-table entry
//     (key, value) or the fact that the key is absent; charged
//     kCachedEntryBytes each (the 24-byte chain node plus the index's share).
//   CachedBTree: one object per looked-up key for LowerBound: the entry it
//     found (or "none"), charged kCachedEntryBytes.  Range operations are not
//     cached (they go to the memory node every time).
// The cache is not coherent with writes made through the structures: a
// caller that changes a structure calls Invalidate(key) (or Clear()).  As in
// the paper, a single memory node only: Create() refuses a cluster of more.
//
// Thread-safety: not thread-safe; shares its RpcClient's thread.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <unordered_map>

#include "pulse/ds/btree.h"
#include "pulse/ds/unordered_map.h"
#include "pulse/rpc.h"

namespace pulse::rpc {

inline constexpr uint64_t kCachedEntryBytes = 64;

struct ObjectCacheOptions {
  uint64_t budget_bytes = 1 << 20;
};

struct ObjectCacheCounters {
  uint64_t hits = 0;
  uint64_t misses = 0;      // each one RPC
  uint64_t evictions = 0;
  uint64_t bytes = 0;       // in use now
  uint64_t objects = 0;     // cached now
};

// A byte-budgeted LRU map from uint64 keys to V, each entry charged
// `entry_bytes` unless Put names its own charge.  Not thread-safe.
template <typename V>
class LruObjectCache {
 public:
  LruObjectCache(uint64_t budget_bytes, uint64_t entry_bytes) : budget_(budget_bytes), entry_bytes_(entry_bytes) {}
  // The cached value (now most recently used), or nullptr; counts a hit or
  // a miss.
  const V* Get(uint64_t key) {
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++counters_.misses;
      return nullptr;
    }
    ++counters_.hits;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->value;
  }
  // Caches key -> value, evicting least recently used entries to stay
  // within the budget (nothing is cached if one entry exceeds it).
  void Put(uint64_t key, V value) { Put(key, std::move(value), entry_bytes_); }
  void Put(uint64_t key, V value, uint64_t bytes) {
    Erase(key);
    if (bytes > budget_) return;
    while (counters_.bytes + bytes > budget_) {
      const Entry& victim = order_.back();
      counters_.bytes -= victim.bytes;
      index_.erase(victim.key);
      order_.pop_back();
      --counters_.objects;
      ++counters_.evictions;
    }
    order_.push_front(Entry{key, std::move(value), bytes});
    index_[key] = order_.begin();
    counters_.bytes += bytes;
    ++counters_.objects;
  }
  void Erase(uint64_t key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    counters_.bytes -= it->second->bytes;
    order_.erase(it->second);
    index_.erase(it);
    --counters_.objects;
  }
  void Clear() {
    order_.clear();
    index_.clear();
    counters_.bytes = counters_.objects = 0;
  }
  const ObjectCacheCounters& counters() const { return counters_; }
  uint64_t budget_bytes() const { return budget_; }

 private:
  struct Entry {
    uint64_t key;
    V value;
    uint64_t bytes;  // its charge
  };
  using Order = std::list<Entry>;
  uint64_t budget_, entry_bytes_;
  Order order_;  // most recently used first
  std::unordered_map<uint64_t, typename Order::iterator> index_;
  ObjectCacheCounters counters_;
};

// UnorderedMap::Find through the cache.
class CachedUnorderedMap {
 public:
  // `rpc` and `map` must outlive the cache.  InvalidArgument if the cluster
  // has more than one memory node.
  static Result<std::unique_ptr<CachedUnorderedMap>> Create(RpcClient* rpc, const ds::UnorderedMap* map,
                                                            const ObjectCacheOptions& options = {});
  // The value of key (cached, or one RPC on a miss).
  Result<std::optional<uint64_t>> Find(uint64_t key, const RpcCallOptions& options = {});
  void Invalidate(uint64_t key) { cache_.Erase(key); }
  void Clear() { cache_.Clear(); }
  const ObjectCacheCounters& counters() const { return cache_.counters(); }

 private:
  CachedUnorderedMap(RpcClient* rpc, const ds::UnorderedMap* map, const ObjectCacheOptions& options)
      : rpc_(rpc), map_(map), cache_(options.budget_bytes, kCachedEntryBytes) {}
  RpcClient* rpc_;
  const ds::UnorderedMap* map_;
  LruObjectCache<std::optional<uint64_t>> cache_;
};

// BTree::LowerBound through the cache.
class CachedBTree {
 public:
  // As CachedUnorderedMap::Create.
  static Result<std::unique_ptr<CachedBTree>> Create(RpcClient* rpc, const ds::BTree* tree,
                                                     const ObjectCacheOptions& options = {});
  Result<std::optional<ds::BTree::Entry>> LowerBound(uint64_t key, const RpcCallOptions& options = {});
  void Invalidate(uint64_t key) { cache_.Erase(key); }
  void Clear() { cache_.Clear(); }
  const ObjectCacheCounters& counters() const { return cache_.counters(); }

 private:
  CachedBTree(RpcClient* rpc, const ds::BTree* tree, const ObjectCacheOptions& options)
      : rpc_(rpc), tree_(tree), cache_(options.budget_bytes, kCachedEntryBytes) {}
  RpcClient* rpc_;
  const ds::BTree* tree_;
  LruObjectCache<std::optional<ds::BTree::Entry>> cache_;
};

}  // namespace pulse::rpc
