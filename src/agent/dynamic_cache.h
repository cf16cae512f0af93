// The offload agent's dynamic cache (seed 003 IV-C, "cache table"): entries
// of `entry_bytes` (1 MB: 16 pages of 64 KB), keyed by (region, entry index)
// in a hash table, evicted at random (among the entries the caller does not
// name as in use, when there are any: see Insert).  An entry is filling
// while its fetch is outstanding; requests that find it filling wait on it
// (waiters), and an entry with waiters or a fill outstanding is pinned:
// never evicted.  Writes
// that reach a filling entry are kept as patches and applied, in order, when
// the fill lands, so the entry never holds data older than the last write.
// Single-threaded (the agent's request thread owns it).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace pulse::agent {

struct CacheKey {
  uint64_t region = 0;
  uint64_t entry = 0;  // byte offset in the region / entry_bytes
  bool operator==(const CacheKey&) const = default;
};

struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const { return std::hash<uint64_t>()(k.region * 0x9E3779B97F4A7C15ull ^ k.entry); }
};

// A request waiting for a filling entry: copy `length` bytes at
// `entry_offset` of the entry to byte `dst_offset` of pending request `pending`.
struct CacheWaiter {
  uint64_t pending = 0;
  uint64_t dst_offset = 0;
  uint64_t entry_offset = 0;
  uint64_t length = 0;
};

struct CachePatch {
  uint64_t entry_offset = 0;
  std::vector<uint8_t> bytes;
};

struct CacheEntry {
  bool ready = false;                // filled; false while its fetch is outstanding
  std::vector<uint8_t> data;         // entry_bytes once ready
  std::vector<CacheWaiter> waiters;  // pin the entry
  std::vector<CachePatch> patches;   // writes that arrived while filling
  size_t slot = 0;                   // index in the eviction vector
  uint64_t lookups = 0;              // page lookups that found it (diagnostics: evicted unused)
  bool pinned() const { return !ready || !waiters.empty(); }
};

class DynamicCache {
 public:
  DynamicCache(uint64_t capacity_entries, uint64_t entry_bytes, uint64_t seed)
      : capacity_(capacity_entries), entry_bytes_(entry_bytes), rng_(seed) {}

  CacheEntry* Find(const CacheKey& key);
  // A new filling entry for `key` (absent), evicting a random unpinned entry
  // when full; nullptr if full and every entry is pinned, or capacity is 0.
  // `in_use` (may be empty) names entries to spare: the victim is drawn from
  // the unpinned entries it does not name, and from every unpinned entry
  // only when it names them all.
  using InUse = std::function<bool(const CacheKey&)>;
  CacheEntry* Insert(const CacheKey& key, const InUse& in_use = {});
  void Erase(const CacheKey& key);
  // Drops every unpinned entry (the dynamic cache switched off).
  void DropUnpinned();
  // Applies a write of `bytes` at byte `offset` of `region` to the entries
  // it overlaps (ready: in place; filling: as a patch).
  void ApplyWrite(uint64_t region, uint64_t offset, const uint8_t* bytes, uint64_t length);
  // Fill landed: applies the patches and marks the entry ready.
  void Filled(CacheEntry* entry, std::vector<uint8_t> data);

  uint64_t entry_bytes() const { return entry_bytes_; }
  uint64_t capacity() const { return capacity_; }
  size_t size() const { return map_.size(); }
  uint64_t evictions() const { return evictions_; }
  // Diagnostics: entries evicted that no lookup had found since they were
  // inserted (a prefetch nobody asked for, or one evicted before its use),
  // and whether `key` was evicted and not inserted again since (a miss on
  // it is a reuse the cache lost, not a first touch).
  uint64_t evicted_unused() const { return evicted_unused_; }
  bool WasEvicted(const CacheKey& key) const { return evicted_.count(key) != 0; }
  // Forgets which of `region`'s entries were evicted (the region is gone).
  void ForgetEvicted(uint64_t region);

 private:
  bool EvictOne(const InUse& in_use);
  void Evict(const CacheKey& key);

  uint64_t capacity_;
  uint64_t entry_bytes_;
  std::mt19937_64 rng_;
  std::unordered_map<CacheKey, CacheEntry, CacheKeyHash> map_;
  std::vector<CacheKey> slots_;  // every key, for a uniform random pick
  uint64_t evictions_ = 0;
  uint64_t evicted_unused_ = 0;
  std::unordered_set<CacheKey, CacheKeyHash> evicted_;  // keys evicted and not cached since
};

}  // namespace pulse::agent
