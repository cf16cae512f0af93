// The offload agent's recent list (seed 003 IV-C): a ring of the last
// `capacity` (128 by default) requested pages, newest at the head, the
// oldest overwritten when full.  The prefetcher reads it in arrival order
// from its own cursor (Next); a reader that fell more than `capacity`
// behind loses the overwritten pages (counted).  Single-threaded: the
// agent's request thread both pushes and prefetches, so no lock is needed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace pulse::agent {

struct RecentPage {
  uint64_t region = 0;
  uint64_t offset = 0;  // byte offset of the page in its region
  bool missed = false;  // the page was not cached when requested
  bool stream = false;  // continues a forward scan (AgentCore::ContinuesStream)
};

class RecentList {
 public:
  explicit RecentList(uint32_t capacity) : ring_(capacity == 0 ? 1 : capacity) {}

  void Push(const RecentPage& page) {
    ring_[head_ % ring_.size()] = page;
    ++head_;
  }
  // The oldest page not yet read by the prefetcher, or nullopt.
  std::optional<RecentPage> Next() {
    if (cursor_ + ring_.size() < head_) {
      lost_ += head_ - ring_.size() - cursor_;
      cursor_ = head_ - ring_.size();
    }
    if (cursor_ == head_) return std::nullopt;
    return ring_[cursor_++ % ring_.size()];
  }
  // Calls f(page) for the `limit` newest pages held (all by default), newest first.
  template <typename F>
  void ForEach(F&& f, uint64_t limit = UINT64_MAX) const {
    const uint64_t n = std::min<uint64_t>({head_, ring_.size(), limit});
    for (uint64_t i = 1; i <= n; ++i) f(ring_[(head_ - i) % ring_.size()]);
  }
  // Pages the reader has not read yet (at most capacity: older ones are lost).
  uint64_t unread() const { return std::min<uint64_t>(head_ - cursor_, ring_.size()); }
  uint64_t pushed() const { return head_; }
  uint64_t lost() const { return lost_; }
  size_t capacity() const { return ring_.size(); }

 private:
  std::vector<RecentPage> ring_;
  uint64_t head_ = 0;    // pages pushed so far
  uint64_t cursor_ = 0;  // the prefetcher's next page
  uint64_t lost_ = 0;
};

}  // namespace pulse::agent
