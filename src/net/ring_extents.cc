// First-fit runs of a double-layer ring's data area (ring_extents.h).
#include "net/ring_extents.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace pulse::net::ring {

ExtentAllocator::ExtentAllocator(size_t bytes, size_t unit)
    : unit_(unit == 0 ? 1 : unit), units_(bytes / unit_), free_units_(units_), used_((units_ + 63) / 64, 0) {
  // The tail of the last word is past the end: used for good.
  if (units_ % 64 != 0) used_.back() = ~uint64_t{0} << (units_ % 64);
}

size_t ExtentAllocator::Units(size_t bytes) const { return std::max<size_t>(1, (bytes + unit_ - 1) / unit_); }

void ExtentAllocator::Mark(size_t first, size_t count, bool used) {
  for (size_t u = first; u < first + count;) {
    const size_t bit = u % 64;
    const size_t n = std::min<size_t>(64 - bit, first + count - u);
    const uint64_t mask = (n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << bit;
    if (used) {
      used_[u / 64] |= mask;
    } else {
      used_[u / 64] &= ~mask;
    }
    u += n;
  }
}

std::optional<size_t> ExtentAllocator::Allocate(size_t bytes) {
  const size_t want = Units(bytes);
  if (want > free_units_) return std::nullopt;
  while (lowest_free_word_ < used_.size() && used_[lowest_free_word_] == ~uint64_t{0}) ++lowest_free_word_;
  size_t run = 0;
  size_t start = 0;
  for (size_t w = lowest_free_word_; w < used_.size(); ++w) {
    const uint64_t word = used_[w];
    if (word == ~uint64_t{0}) {
      run = 0;
      continue;
    }
    if (word == 0 && run + 64 < want) {  // a whole free word that does not finish the run
      if (run == 0) start = w * 64;
      run += 64;
      continue;
    }
    for (size_t bit = 0; bit < 64; ++bit) {
      if ((word >> bit) & 1) {
        run = 0;
        continue;
      }
      if (run == 0) start = w * 64 + bit;
      if (++run == want) {
        Mark(start, want, true);
        free_units_ -= want;
        return start * unit_;
      }
    }
  }
  return std::nullopt;
}

void ExtentAllocator::Free(size_t offset, size_t bytes) {
  const size_t count = Units(bytes);
  const size_t first = offset / unit_;
  bool allocated = offset % unit_ == 0 && first + count <= units_;
  for (size_t u = first; allocated && u < first + count; ++u) allocated = Used(u);
  if (!allocated) {
    std::fprintf(stderr, "ExtentAllocator::Free(%zu, %zu): not an allocated extent\n", offset, bytes);
    std::abort();
  }
  Mark(first, count, false);
  free_units_ += count;
  lowest_free_word_ = std::min(lowest_free_word_, first / 64);
}

size_t ExtentAllocator::largest_free() const {
  size_t best = 0;
  for (size_t u = 0, run = 0; u < units_; ++u) {
    run = Used(u) ? 0 : run + 1;
    best = std::max(best, run);
  }
  return best * unit_;
}

}  // namespace pulse::net::ring
