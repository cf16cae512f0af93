// Page-aligned, zeroed memory for the ring path's staging copies (the
// registered rings and tails are allocated by UCX: Worker::AllocateMemory).
// A ring on pages of its own shares no page with another heap object, for
// transports whose keys reach whole pages (docs/ring.md, "Security").
//
// Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace pulse::net::ring {

inline constexpr size_t kPageBytes = 4096;

// `bytes` rounded up to whole pages, zeroed; free with std::free.  nullptr
// if there is no memory.
inline void* AllocatePages(size_t bytes) {
  const size_t rounded = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  void* p = std::aligned_alloc(kPageBytes, rounded == 0 ? kPageBytes : rounded);
  if (p != nullptr) std::memset(p, 0, rounded == 0 ? kPageBytes : rounded);
  return p;
}

// Owns one AllocatePages() block.  Movable, not copyable.
class PageMemory {
 public:
  PageMemory() = default;
  explicit PageMemory(size_t bytes) : data_(static_cast<uint8_t*>(AllocatePages(bytes))), size_(bytes) {
    if (data_ == nullptr) size_ = 0;
  }
  PageMemory(PageMemory&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  PageMemory& operator=(PageMemory&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  PageMemory(const PageMemory&) = delete;
  PageMemory& operator=(const PageMemory&) = delete;
  ~PageMemory() { std::free(data_); }

  bool valid() const { return data_ != nullptr; }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Keeps `memory` allocated until the process exits: a transport may still
// write into it after its owner is gone (a put still in flight, a memory
// node answering into a ring it has not seen closed yet).  The blocks stay
// reachable from a process-wide list, so leak checkers do not report them.
// Thread-safe.
inline void RetirePages(PageMemory memory) {
  static std::mutex* mu = new std::mutex;
  static std::vector<PageMemory>* retired = new std::vector<PageMemory>;
  std::lock_guard<std::mutex> lock(*mu);
  retired->push_back(std::move(memory));
}

}  // namespace pulse::net::ring
