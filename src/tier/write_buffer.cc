#include "pulse/tier/write_buffer.h"

#include <algorithm>
#include <cstring>

namespace pulse::tier {

WriteBuffer::WriteBuffer(const WriteBufferOptions& options) : options_(options) {
  if (options_.buffer_bytes == 0) options_.buffer_bytes = 1;
}

bool WriteBuffer::Buffers(size_t len) const { return options_.enabled && len > 0 && len < options_.threshold_bytes; }

uint64_t WriteBuffer::Merge(Extents* extents, uint64_t addr, const uint8_t* src, size_t len) {
  const uint64_t end = addr + len;
  // The extents that overlap or touch [addr, end) become one.
  auto first = extents->upper_bound(addr);
  if (first != extents->begin()) {
    auto prev = std::prev(first);
    if (prev->first + prev->second.size() >= addr) first = prev;
  }
  auto last = first;
  uint64_t lo = addr, hi = end, before = 0;
  while (last != extents->end() && last->first <= end) {
    before += last->second.size();
    lo = std::min(lo, last->first);
    hi = std::max<uint64_t>(hi, last->first + last->second.size());
    ++last;
  }
  std::vector<uint8_t> merged(hi - lo);
  for (auto it = first; it != last; ++it) std::memcpy(merged.data() + (it->first - lo), it->second.data(), it->second.size());
  std::memcpy(merged.data() + (addr - lo), src, len);  // the newest bytes win
  extents->erase(first, last);
  extents->emplace(lo, std::move(merged));
  return hi - lo - before;
}

void WriteBuffer::Add(uint64_t addr, const void* src, size_t len) {
  if (len == 0) return;
  pending_bytes_ += Merge(&pending_, addr, static_cast<const uint8_t*>(src), len);
}

bool WriteBuffer::AnyIn(const Extents& extents, uint64_t addr, size_t len) {
  auto it = extents.upper_bound(addr);
  if (it != extents.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.size() > addr) return true;
  }
  return it != extents.end() && it->first < addr + len;
}

bool WriteBuffer::Overlaps(uint64_t addr, size_t len) const {
  if (len == 0) return false;
  return AnyIn(pending_, addr, len) || (in_flight_ != nullptr && AnyIn(*in_flight_, addr, len));
}

bool WriteBuffer::Covers(uint64_t addr, size_t len) const {
  // Walks the range, jumping to the end of whichever extent holds `pos`.
  auto end_of_extent_at = [](const Extents& extents, uint64_t pos) -> uint64_t {
    auto it = extents.upper_bound(pos);
    if (it == extents.begin()) return 0;
    --it;
    const uint64_t end = it->first + it->second.size();
    return end > pos ? end : 0;
  };
  for (uint64_t pos = addr; pos < addr + len;) {
    uint64_t next = end_of_extent_at(pending_, pos);
    if (in_flight_ != nullptr) next = std::max(next, end_of_extent_at(*in_flight_, pos));
    if (next == 0) return false;
    pos = next;
  }
  return true;
}

void WriteBuffer::OverlayFrom(const Extents& extents, uint64_t addr, uint8_t* dst, size_t len) {
  const uint64_t end = addr + len;
  auto it = extents.upper_bound(addr);
  if (it != extents.begin()) --it;
  for (; it != extents.end() && it->first < end; ++it) {
    const uint64_t lo = std::max(addr, it->first), hi = std::min<uint64_t>(end, it->first + it->second.size());
    if (lo < hi) std::memcpy(dst + (lo - addr), it->second.data() + (lo - it->first), hi - lo);
  }
}

void WriteBuffer::Overlay(uint64_t addr, void* dst, size_t len) const {
  auto* out = static_cast<uint8_t*>(dst);
  if (in_flight_ != nullptr) OverlayFrom(*in_flight_, addr, out, len);
  OverlayFrom(pending_, addr, out, len);
}

std::shared_ptr<const WriteBuffer::Extents> WriteBuffer::StartFlush() {
  if (in_flight_ != nullptr || pending_.empty()) return nullptr;
  in_flight_ = std::make_shared<const Extents>(std::move(pending_));
  pending_.clear();
  pending_bytes_ = 0;
  return in_flight_;
}

uint64_t WriteBuffer::Discard() {
  uint64_t dropped = pending_bytes_;
  if (in_flight_ != nullptr)
    for (const auto& [a, bytes] : *in_flight_) dropped += bytes.size();
  pending_.clear();
  pending_bytes_ = 0;
  in_flight_.reset();
  return dropped;
}

}  // namespace pulse::tier
