// The paging baseline's page cache (ycsb_paging.h).
#include "bench/ycsb_paging.h"

#include <algorithm>
#include <cstring>

namespace pulse::bench {

PageCacheMemory::PageCacheMemory(Client* client, uint64_t capacity_pages)
    : client_(client), capacity_(std::max<uint64_t>(1, capacity_pages)) {}

Status PageCacheMemory::WriteBack(uint64_t page, Page& p) {
  if (p.dirty_end <= p.dirty_begin) return Status::Ok();
  PULSE_RETURN_IF_ERROR(client_->Write(page + p.dirty_begin, p.data.data() + p.dirty_begin, p.dirty_end - p.dirty_begin));
  p.dirty_begin = p.dirty_end = 0;
  ++counters_.writebacks;
  return Status::Ok();
}

Result<PageCacheMemory::Page*> PageCacheMemory::Get(uint64_t page) {
  if (auto it = pages_.find(page); it != pages_.end()) {
    ++counters_.hits;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return &it->second;
  }
  std::vector<uint8_t> data(kPageBytes);
  if (!client_->Read(page, data.data(), kPageBytes).ok()) {
    ++counters_.uncached;
    return nullptr;
  }
  ++counters_.faults;
  if (pages_.size() >= capacity_) {
    const uint64_t victim = lru_.back();
    Page& v = pages_.at(victim);
    PULSE_RETURN_IF_ERROR(WriteBack(victim, v));
    lru_.pop_back();
    pages_.erase(victim);
    ++counters_.evictions;
  }
  lru_.push_front(page);
  Page& p = pages_[page];
  p.data = std::move(data);
  p.lru = lru_.begin();
  return &p;
}

TraversalStatus PageCacheMemory::ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) {
  if (client_->NodeOf(addr) == std::nullopt) return TraversalStatus::kFaultInvalidPointer;
  for (uint64_t pos = addr; pos < addr + len;) {
    const uint64_t page = pos / kPageBytes * kPageBytes;
    const uint64_t n = std::min<uint64_t>(page + kPageBytes - pos, addr + len - pos);
    Result<Page*> p = Get(page);
    if (!p.ok()) return TraversalStatus::kNodeUnavailable;
    if (*p == nullptr) {
      if (!client_->Read(pos, dst + (pos - addr), n).ok()) return TraversalStatus::kFaultProtection;
    } else {
      std::memcpy(dst + (pos - addr), (*p)->data.data() + (pos - page), n);
    }
    pos += n;
  }
  return TraversalStatus::kDone;
}

TraversalStatus PageCacheMemory::Store(uint64_t addr, const uint8_t* src, uint32_t len) {
  return Write(addr, src, len).ok() ? TraversalStatus::kDone : TraversalStatus::kNodeUnavailable;
}

Status PageCacheMemory::Write(uint64_t addr, const void* src, size_t len) {
  const uint8_t* in = static_cast<const uint8_t*>(src);
  for (uint64_t pos = addr; pos < addr + len;) {
    const uint64_t page = pos / kPageBytes * kPageBytes;
    const uint64_t n = std::min<uint64_t>(page + kPageBytes - pos, addr + len - pos);
    PULSE_ASSIGN_OR_RETURN(Page * p, Get(page));
    if (p == nullptr) {
      PULSE_RETURN_IF_ERROR(client_->Write(pos, in + (pos - addr), n));
    } else {
      const uint32_t off = static_cast<uint32_t>(pos - page);
      std::memcpy(p->data.data() + off, in + (pos - addr), n);
      if (p->dirty_end <= p->dirty_begin) {
        p->dirty_begin = off;
        p->dirty_end = off + static_cast<uint32_t>(n);
      } else {
        p->dirty_begin = std::min(p->dirty_begin, off);
        p->dirty_end = std::max(p->dirty_end, off + static_cast<uint32_t>(n));
      }
    }
    pos += n;
  }
  return Status::Ok();
}

Status PageCacheMemory::Flush() {
  for (auto& [page, p] : pages_) PULSE_RETURN_IF_ERROR(WriteBack(page, p));
  return Status::Ok();
}

}  // namespace pulse::bench
