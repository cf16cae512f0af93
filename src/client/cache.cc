#include "client/cache.h"

#include <algorithm>
#include <cstring>

namespace pulse {

BlockCache::BlockCache(const CacheOptions& options, FetchFn fetch, StoreFn store, ClientCounters* counters)
    : options_(options), fetch_(std::move(fetch)), store_(std::move(store)), counters_(counters) {
  block_ = options.granularity == CacheGranularity::kPage ? options.page_bytes : options.object_bytes;
  if (block_ == 0 || (block_ & (block_ - 1)) != 0) block_ = 0;  // validated by the client
  capacity_ = block_ == 0 ? 0 : options.bytes / block_;
  if (options.eviction == CacheEviction::kClock) ring_.assign(capacity_, 0);
}

BlockCache::Block* BlockCache::Find(uint64_t block) {
  auto it = blocks_.find(block);
  return it == blocks_.end() ? nullptr : &it->second;
}

void BlockCache::Touch(uint64_t block, Block& b) {
  if (options_.eviction == CacheEviction::kLru) {
    lru_.splice(lru_.begin(), lru_, b.lru);
  } else {
    b.referenced = true;
  }
  (void)block;
}

Status BlockCache::WriteBack(uint64_t block, Block& b) {
  if (!b.dirty) return Status::Ok();
  // Each run of written bytes; a failure leaves the block dirty (re-writing
  // a run is harmless).
  for (size_t i = 0; i < block_;) {
    if (!b.written[i]) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < block_ && b.written[end]) ++end;
    PULSE_RETURN_IF_ERROR(store_(block + i, b.data.get() + i, end - i));
    i = end;
  }
  b.written.clear();
  b.dirty = false;
  --dirty_;
  ++counters_->writebacks;
  return Status::Ok();
}

Status BlockCache::Evict() {
  uint64_t victim;
  if (options_.eviction == CacheEviction::kLru) {
    victim = lru_.back();
  } else {
    for (;;) {  // at most two sweeps: the first clears every reference bit
      Block& b = blocks_.at(ring_[hand_]);
      if (!b.referenced) break;
      b.referenced = false;
      hand_ = (hand_ + 1) % capacity_;
    }
    victim = ring_[hand_];
  }
  Block& b = blocks_.at(victim);
  PULSE_RETURN_IF_ERROR(WriteBack(victim, b));
  Forget(victim, b);
  ++counters_->cache_evictions;
  return Status::Ok();
}

Result<BlockCache::Block*> BlockCache::Insert(uint64_t block) {
  if (blocks_.size() >= capacity_) PULSE_RETURN_IF_ERROR(Evict());
  Block b;
  b.data.reset(new uint8_t[block_]);
  if (options_.eviction == CacheEviction::kLru) {
    lru_.push_front(block);
    b.lru = lru_.begin();
  } else {
    // The hand points at the evicted slot, or the ring still has free ones.
    size_t slot = hand_;
    if (ring_[slot] != 0) slot = static_cast<size_t>(std::find(ring_.begin(), ring_.end(), 0) - ring_.begin());
    ring_[slot] = block;
    b.slot = slot;
    b.referenced = true;
    hand_ = (slot + 1) % capacity_;
  }
  counters_->cache_bytes += block_;
  return &blocks_.emplace(block, std::move(b)).first->second;
}

void BlockCache::Forget(uint64_t block, Block& b) {
  if (options_.eviction == CacheEviction::kLru) {
    lru_.erase(b.lru);
  } else {
    ring_[b.slot] = 0;
  }
  if (b.dirty) --dirty_;
  blocks_.erase(block);
  counters_->cache_bytes -= block_;
}

Result<BlockCache::Block*> BlockCache::Lookup(uint64_t block, bool whole) {
  if (Block* b = Find(block)) {
    ++counters_->cache_hits;
    Touch(block, *b);
    return b;
  }
  ++counters_->cache_misses;
  if (admit_ && !admit_(block)) return nullptr;  // not admitted: read or write through
  auto inserted = Insert(block);
  if (!inserted.ok()) return inserted.status();
  Block* b = *inserted;
  if (!whole && !fetch_(block, b->data.get(), block_).ok()) {
    Forget(block, *b);  // e.g. a block reaching past the end of a node's pool
    return nullptr;
  }
  return b;
}

Status BlockCache::SettleInvalidation() {
  // Only between the blocks of the outermost access, where no block is held.
  if (!owes_invalidation_ || busy_ > 1) return Status::Ok();
  // An invalidation owed again during this one's write-backs is covered by
  // the drop below, which comes after them.
  PULSE_RETURN_IF_ERROR(Flush());
  counters_->cache_bytes -= block_ * blocks_.size();
  blocks_.clear();
  lru_.clear();
  std::fill(ring_.begin(), ring_.end(), 0);
  hand_ = 0;
  owes_invalidation_ = false;
  return Status::Ok();
}

Status BlockCache::Read(uint64_t addr, void* dst, size_t len) {
  AccessScope scope(this);
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (uint64_t pos = addr; pos < addr + len;) {
    // Owed since the last block (its fetch ran handlers): done before this one.
    PULSE_RETURN_IF_ERROR(SettleInvalidation());
    const uint64_t block = BlockOf(pos);
    const size_t off = pos - block, n = std::min<uint64_t>(block_ - off, addr + len - pos);
    auto b = Lookup(block, /*whole=*/false);
    if (!b.ok()) return b.status();
    if (*b == nullptr) {
      PULSE_RETURN_IF_ERROR(fetch_(pos, out + (pos - addr), n));  // just the bytes asked for
    } else {
      std::memcpy(out + (pos - addr), (*b)->data.get() + off, n);
    }
    pos += n;
  }
  return Status::Ok();
}

bool BlockCache::ReadIfCached(uint64_t addr, void* dst, size_t len) {
  if (owes_invalidation_) return false;
  for (uint64_t block = BlockOf(addr); block < addr + len; block += block_)
    if (Find(block) == nullptr) return false;
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (uint64_t pos = addr; pos < addr + len;) {
    const uint64_t block = BlockOf(pos);
    const size_t off = pos - block, n = std::min<uint64_t>(block_ - off, addr + len - pos);
    Block& b = blocks_.at(block);
    ++counters_->cache_hits;
    Touch(block, b);
    std::memcpy(out + (pos - addr), b.data.get() + off, n);
    pos += n;
  }
  return true;
}

Status BlockCache::Write(uint64_t addr, const void* src, size_t len) {
  AccessScope scope(this);
  const uint8_t* in = static_cast<const uint8_t*>(src);
  if (options_.write == CacheWritePolicy::kWriteThrough) {
    PULSE_RETURN_IF_ERROR(SettleInvalidation());
    PULSE_RETURN_IF_ERROR(store_(addr, src, len));
    PULSE_RETURN_IF_ERROR(SettleInvalidation());  // owed during the store: no block left to update
    for (uint64_t pos = addr; pos < addr + len;) {
      const uint64_t block = BlockOf(pos);
      const size_t off = pos - block, n = std::min<uint64_t>(block_ - off, addr + len - pos);
      if (Block* b = Find(block)) std::memcpy(b->data.get() + off, in + (pos - addr), n);
      pos += n;
    }
    return Status::Ok();
  }
  for (uint64_t pos = addr; pos < addr + len;) {
    PULSE_RETURN_IF_ERROR(SettleInvalidation());  // as in Read
    const uint64_t block = BlockOf(pos);
    const size_t off = pos - block, n = std::min<uint64_t>(block_ - off, addr + len - pos);
    // Write-allocate: the rest of the block must hold the far bytes.
    auto b = Lookup(block, /*whole=*/n == block_);
    if (!b.ok()) return b.status();
    if (*b == nullptr) {
      PULSE_RETURN_IF_ERROR(store_(pos, in + (pos - addr), n));  // cannot cache it: write through
    } else {
      std::memcpy((*b)->data.get() + off, in + (pos - addr), n);
      if (!(*b)->dirty) {
        (*b)->dirty = true;
        (*b)->written.assign(block_, 0);
        ++dirty_;
      }
      std::fill_n((*b)->written.begin() + static_cast<std::ptrdiff_t>(off), n, uint8_t{1});
    }
    pos += n;
  }
  return Status::Ok();
}

Status BlockCache::Flush() {
  AccessScope scope(this);
  if (owes_invalidation_ && busy_ == 1) return SettleInvalidation();  // flushes, then drops the blocks
  if (dirty_ == 0) return Status::Ok();
  for (auto& [block, b] : blocks_) PULSE_RETURN_IF_ERROR(WriteBack(block, b));
  return Status::Ok();
}

Status BlockCache::Invalidate() {
  owes_invalidation_ = true;
  if (busy_ > 0) return Status::Ok();  // called from inside an access: done before the next one
  AccessScope scope(this);
  return SettleInvalidation();
}

}  // namespace pulse
