#include "agent/dynamic_cache.h"

#include <algorithm>
#include <cstring>

namespace pulse::agent {

CacheEntry* DynamicCache::Find(const CacheKey& key) {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

bool DynamicCache::EvictOne(const InUse& in_use) {
  if (slots_.empty()) return false;
  // A few random picks, then a scan from a random start: random eviction
  // that still finds the one candidate among many pinned or spared ones.
  auto spare = [&](const CacheKey& key) { return in_use && in_use(key); };
  std::uniform_int_distribution<size_t> pick(0, slots_.size() - 1);
  for (int attempt = 0; attempt < 8; ++attempt) {
    const CacheKey key = slots_[pick(rng_)];
    if (!map_.at(key).pinned() && !spare(key)) {
      Evict(key);
      return true;
    }
  }
  const size_t start = pick(rng_);
  for (bool spare_in_use : {true, false}) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      const CacheKey key = slots_[(start + i) % slots_.size()];
      if (!map_.at(key).pinned() && !(spare_in_use && spare(key))) {
        Evict(key);
        return true;
      }
    }
  }
  return false;
}

void DynamicCache::Evict(const CacheKey& key) {
  if (map_.at(key).lookups == 0) ++evicted_unused_;
  evicted_.insert(key);
  Erase(key);
  ++evictions_;
}

CacheEntry* DynamicCache::Insert(const CacheKey& key, const InUse& in_use) {
  if (capacity_ == 0) return nullptr;
  if (map_.size() >= capacity_ && !EvictOne(in_use)) return nullptr;
  auto [it, inserted] = map_.try_emplace(key);
  evicted_.erase(key);
  if (inserted) {
    it->second.slot = slots_.size();
    slots_.push_back(key);
  }
  return &it->second;
}

void DynamicCache::Erase(const CacheKey& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return;
  const size_t slot = it->second.slot;
  const CacheKey last = slots_.back();
  slots_[slot] = last;
  map_.at(last).slot = slot;
  slots_.pop_back();
  map_.erase(it);
}

void DynamicCache::ForgetEvicted(uint64_t region) {
  std::erase_if(evicted_, [region](const CacheKey& k) { return k.region == region; });
}

void DynamicCache::DropUnpinned() {
  std::vector<CacheKey> drop;
  for (const auto& [key, e] : map_)
    if (!e.pinned()) drop.push_back(key);
  for (const CacheKey& key : drop) Erase(key);
}

void DynamicCache::ApplyWrite(uint64_t region, uint64_t offset, const uint8_t* bytes, uint64_t length) {
  const uint64_t end = offset + length;
  for (uint64_t e = offset / entry_bytes_; e * entry_bytes_ < end; ++e) {
    CacheEntry* entry = Find({region, e});
    if (entry == nullptr) continue;
    const uint64_t lo = std::max(offset, e * entry_bytes_), hi = std::min(end, (e + 1) * entry_bytes_);
    const uint64_t at = lo - e * entry_bytes_;
    if (entry->ready) {
      std::memcpy(entry->data.data() + at, bytes + (lo - offset), hi - lo);
    } else {
      entry->patches.push_back({at, std::vector<uint8_t>(bytes + (lo - offset), bytes + (hi - offset))});
    }
  }
}

void DynamicCache::Filled(CacheEntry* entry, std::vector<uint8_t> data) {
  entry->data = std::move(data);
  entry->data.resize(entry_bytes_);
  for (const CachePatch& p : entry->patches) std::memcpy(entry->data.data() + p.entry_offset, p.bytes.data(), p.bytes.size());
  entry->patches.clear();
  entry->ready = true;
}

}  // namespace pulse::agent
