// The memory node's pool allocator and shared-memory pool.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <random>

#include "memnode/allocator.h"
#include "memnode/pool.h"

namespace pulse::memnode {
namespace {

constexpr uint64_t kUnit = 64 * 1024;

TEST(MemNodeAllocator, RoundsUpToTheGranularityAndFirstFits) {
  PoolAllocator a(16 * kUnit, kUnit);
  auto x = a.Allocate(1);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->offset, 0u);
  EXPECT_EQ(x->length, kUnit);
  auto y = a.Allocate(kUnit + 1);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->offset, kUnit);
  EXPECT_EQ(y->length, 2 * kUnit);
  EXPECT_EQ(a.used(), 3 * kUnit);
  ASSERT_TRUE(a.Free(x->offset).ok());
  auto z = a.Allocate(kUnit);  // first fit: the hole at 0
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->offset, 0u);
}

TEST(MemNodeAllocator, FreeCoalescesBothNeighbours) {
  PoolAllocator a(4 * kUnit, kUnit);
  uint64_t off[4];
  for (auto& o : off) {
    auto r = a.Allocate(kUnit);
    ASSERT_TRUE(r.ok());
    o = r->offset;
  }
  EXPECT_EQ(a.free_bytes(), 0u);
  ASSERT_TRUE(a.Free(off[0]).ok());
  ASSERT_TRUE(a.Free(off[2]).ok());
  EXPECT_EQ(a.free_blocks(), 2u);
  EXPECT_EQ(a.largest_free(), kUnit);
  ASSERT_TRUE(a.Free(off[1]).ok());  // joins 0 and 2
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.largest_free(), 3 * kUnit);
  ASSERT_TRUE(a.Free(off[3]).ok());
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.largest_free(), 4 * kUnit);
  EXPECT_EQ(a.allocations(), 0u);
}

TEST(MemNodeAllocator, ErrorsNameTheProblem) {
  PoolAllocator a(4 * kUnit, kUnit);
  auto zero = a.Allocate(0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "alloc: bytes must be positive");
  ASSERT_TRUE(a.Allocate(kUnit).ok());
  auto big = a.Allocate(4 * kUnit);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(big.status().message(), "alloc: pool exhausted (asked 262144, largest free 196608)");
  auto huge = a.Allocate(UINT64_MAX);  // must not overflow into a small request
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(a.Free(12345).code(), Status::Code::kNotFound);
}

TEST(MemNodeAllocator, ManyRandomOperationsKeepTheBooksBalanced) {
  PoolAllocator a(256 * kUnit, kUnit);
  std::vector<uint64_t> live;
  uint32_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 1103515245 + 12345;
    if (live.empty() || (x >> 16) % 3 != 0) {
      auto r = a.Allocate(((x >> 8) % 5 + 1) * kUnit - 7);
      if (r.ok()) live.push_back(r->offset);
    } else {
      const size_t k = (x >> 4) % live.size();
      ASSERT_TRUE(a.Free(live[k]).ok());
      live.erase(live.begin() + static_cast<long>(k));
    }
  }
  for (uint64_t o : live) ASSERT_TRUE(a.Free(o).ok());
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.largest_free(), 256 * kUnit);
}

// The allocator against a plain interval set of the live blocks: every block
// it hands out lies inside the pool, is granularity-aligned, at least as long
// as asked, and overlaps no live block; it is the first gap that fits (first
// fit, computed from the interval set, not from the allocator); it fails only
// when no gap fits; restores succeed exactly for free aligned ranges; and the
// counters agree with the set after every step.
class IntervalSetReference {
 public:
  explicit IntervalSetReference(uint64_t capacity) : capacity_(capacity) {}

  bool Overlaps(uint64_t offset, uint64_t length) const {
    auto it = live_.lower_bound(offset + length);  // first block starting at or after the end
    if (it == live_.begin()) return false;
    --it;  // the last block starting before the end
    return it->first + it->second > offset;
  }
  // The first gap of at least `length` bytes, or nullopt.
  std::optional<uint64_t> FirstFit(uint64_t length) const {
    uint64_t at = 0;
    for (const auto& [offset, len] : live_) {
      if (offset - at >= length) return at;
      at = offset + len;
    }
    if (capacity_ - at >= length) return at;
    return std::nullopt;
  }
  uint64_t LargestGap() const {
    uint64_t at = 0, best = 0;
    for (const auto& [offset, len] : live_) {
      best = std::max(best, offset - at);
      at = offset + len;
    }
    return std::max(best, capacity_ - at);
  }
  uint64_t Used() const {
    uint64_t sum = 0;
    for (const auto& [offset, len] : live_) sum += len;
    return sum;
  }
  void Add(uint64_t offset, uint64_t length) { live_.emplace(offset, length); }
  const std::map<uint64_t, uint64_t>& live() const { return live_; }
  std::map<uint64_t, uint64_t>& live() { return live_; }

 private:
  uint64_t capacity_;
  std::map<uint64_t, uint64_t> live_;  // offset -> length
};

TEST(MemNodeAllocator, LiveBlocksAreDisjointInsideThePoolAndFirstFitAgainstAnIntervalSet) {
  constexpr uint64_t kUnits = 200;
  const uint64_t pool_bytes = kUnits * kUnit + kUnit / 3;  // a tail shorter than a unit
  PoolAllocator a(pool_bytes, kUnit);
  ASSERT_EQ(a.capacity(), kUnits * kUnit);
  IntervalSetReference ref(kUnits * kUnit);
  std::mt19937_64 rng(19);
  int allocated = 0, exhausted = 0, restored = 0, freed = 0;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 5) {  // allocate an arbitrary byte count, up to a fifth of the pool
      const uint64_t bytes = 1 + rng() % (kUnits * kUnit / 5);
      const uint64_t want = (bytes + kUnit - 1) / kUnit * kUnit;
      const auto fit = ref.FirstFit(want);
      auto r = a.Allocate(bytes);
      if (!fit) {
        ASSERT_FALSE(r.ok()) << "step " << step << ": no gap of " << want << " but it allocated";
        ASSERT_EQ(r.status().code(), Status::Code::kResourceExhausted);
        ++exhausted;
        continue;
      }
      ASSERT_TRUE(r.ok()) << "step " << step << ": " << r.status().ToString();
      ASSERT_EQ(r->offset % kUnit, 0u);
      ASSERT_GE(r->length, bytes);
      ASSERT_EQ(r->length, want);
      ASSERT_LE(r->offset + r->length, kUnits * kUnit) << "outside the pool";
      ASSERT_FALSE(ref.Overlaps(r->offset, r->length)) << "overlaps a live block at step " << step;
      ASSERT_EQ(r->offset, *fit) << "not the first gap that fits";
      ref.Add(r->offset, r->length);
      ++allocated;
    } else if (op < 8 && !ref.live().empty()) {  // free a live block
      auto it = ref.live().begin();
      std::advance(it, static_cast<long>(rng() % ref.live().size()));
      ASSERT_TRUE(a.Free(it->first).ok());
      ref.live().erase(it);
      ++freed;
    } else if (op == 8) {  // restore an arbitrary (often misaligned or busy) range
      const uint64_t unit_off = rng() % (kUnits + 2);
      const uint64_t offset = unit_off * kUnit + (rng() % 4 == 0 ? rng() % kUnit : 0);
      const uint64_t length = (rng() % 6) * kUnit + (rng() % 4 == 0 ? 1 : 0);
      const bool valid = length > 0 && offset % kUnit == 0 && length % kUnit == 0 &&
                         offset + length <= kUnits * kUnit && !ref.Overlaps(offset, length);
      Status s = a.Restore(offset, length);
      ASSERT_EQ(s.ok(), valid) << "restore [" << offset << ", +" << length << "): " << s.ToString();
      if (valid) {
        ref.Add(offset, length);
        ++restored;
      }
    } else {  // free something that is not the start of a live block
      const uint64_t offset = rng() % (kUnits * kUnit + kUnit);
      const bool live = ref.live().count(offset) != 0;
      ASSERT_EQ(a.Free(offset).ok(), live);
      if (live) ref.live().erase(offset);
    }
    ASSERT_EQ(a.used(), ref.Used());
    ASSERT_EQ(a.allocations(), ref.live().size());
    ASSERT_EQ(a.largest_free(), ref.LargestGap());
    for (const auto& [offset, len] : ref.live()) {
      const Allocation* found = a.Find(offset);
      ASSERT_NE(found, nullptr);
      ASSERT_EQ(found->length, len);
    }
  }
  // Each kind of step happened often enough to mean something.
  EXPECT_GT(allocated, 1000);
  EXPECT_GT(exhausted, 50);
  EXPECT_GT(restored, 50);
  EXPECT_GT(freed, 1000);
}

std::string PoolName() { return "/pulse-pool-test-" + std::to_string(getpid()); }

// Overlapping (what a page to move holds) against a scan of every live
// allocation, over random allocations and frees and random windows.
// With pages (a racked node, docs/tier.md): random allocations and frees
// against a reference of units; no allocation of at most a page crosses a
// page boundary, every longer one starts on one, each at the lowest place
// the rule allows (checked by brute force over the reference), and plain
// first fit only where the rule has no place at all.
TEST(MemNodeAllocator, WithPagesNoAllocationOfAPageOrLessCrossesOneAndLongerOnesStartOnOne) {
  constexpr uint64_t kPageUnits = 8;
  constexpr uint64_t kUnits = 8 * kPageUnits + 3;  // a partial page at the end
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    PoolAllocator a(kUnits * kUnit, kUnit);
    a.SetPageBytes(kPageUnits * kUnit);
    ASSERT_EQ(a.page_bytes(), kPageUnits * kUnit);
    std::vector<bool> used(kUnits, false);
    std::map<uint64_t, uint64_t> live;  // offset -> units
    std::mt19937 rng(seed);
    for (int step = 0; step < 2000; ++step) {
      if (live.empty() || rng() % 2 == 0) {
        const uint64_t units = 1 + rng() % (rng() % 4 == 0 ? 2 * kPageUnits : kPageUnits / 2);
        auto free_run = [&](uint64_t at) {
          if (at + units > kUnits) return false;
          for (uint64_t u = at; u < at + units; ++u)
            if (used[u]) return false;
          return true;
        };
        auto ruled = [&](uint64_t at) {
          return units <= kPageUnits ? at % kPageUnits + units <= kPageUnits : at % kPageUnits == 0;
        };
        std::optional<uint64_t> expect;
        for (uint64_t at = 0; at < kUnits && !expect; ++at)
          if (ruled(at) && free_run(at)) expect = at;
        if (!expect) {
          // First fit over free blocks: the lowest start of a free block long enough.
          for (uint64_t at = 0; at < kUnits && !expect; ++at) {
            if (used[at] || (at > 0 && !used[at - 1])) continue;
            uint64_t run = 0;
            while (at + run < kUnits && !used[at + run]) ++run;
            if (run >= units) expect = at;
          }
        }
        auto got = a.Allocate(units * kUnit);
        if (!expect) {
          ASSERT_FALSE(got.ok()) << "seed " << seed << " step " << step;
          continue;
        }
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        ASSERT_EQ(got->offset, *expect * kUnit) << "seed " << seed << " step " << step << " units " << units;
        for (uint64_t u = *expect; u < *expect + units; ++u) used[u] = true;
        live[got->offset] = units;
      } else {
        auto it = live.begin();
        std::advance(it, rng() % live.size());
        ASSERT_TRUE(a.Free(it->first).ok());
        for (uint64_t u = it->first / kUnit; u < it->first / kUnit + it->second; ++u) used[u] = false;
        live.erase(it);
      }
    }
    EXPECT_GT(live.size(), 0u);
  }
  // Without pages, placement is plain first fit (an allocation crosses).
  PoolAllocator plain(4 * kPageUnits * kUnit, kUnit);
  ASSERT_TRUE(plain.Allocate(kUnit).ok());
  auto crossing = plain.Allocate(kPageUnits * kUnit);
  ASSERT_TRUE(crossing.ok());
  EXPECT_EQ(crossing->offset, kUnit);
  // A page that is not a multiple of the granularity is ignored.
  plain.SetPageBytes(kUnit + 1);
  EXPECT_EQ(plain.page_bytes(), 0u);
}

TEST(MemNodeAllocator, OverlappingListsExactlyTheAllocationsWithAByteInTheWindow) {
  std::mt19937_64 rng(16);
  PoolAllocator a(64 * kUnit, kUnit);
  std::map<uint64_t, uint64_t> live;  // offset -> length
  for (int step = 0; step < 2000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      auto x = a.Allocate(1 + rng() % (5 * kUnit));
      if (x.ok()) live[x->offset] = x->length;
    } else {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      ASSERT_TRUE(a.Free(it->first).ok());
      live.erase(it);
    }
    const uint64_t offset = rng() % (64 * kUnit), length = 1 + rng() % (8 * kUnit);
    std::vector<uint64_t> want;
    for (const auto& [o, l] : live)
      if (o < offset + length && o + l > offset) want.push_back(o);
    std::vector<uint64_t> got;
    for (const Allocation& x : a.Overlapping(offset, length)) {
      EXPECT_EQ(x.length, live[x.offset]);
      got.push_back(x.offset);
    }
    ASSERT_EQ(got, want) << "window [" << offset << ", +" << length << ") at step " << step;
  }
}

TEST(MemNodePool, IsANamedSharedObjectUnlinkedOnDestruction) {
  const std::string name = PoolName();
  {
    auto pool = SharedPool::Create(name, 1 << 20);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    (*pool)->data()[4096] = 0x7e;
    // Another mapping of the same name sees the same bytes.
    int fd = shm_open(name.c_str(), O_RDONLY, 0);
    ASSERT_GE(fd, 0);
    void* p = mmap(nullptr, 1 << 20, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_EQ(static_cast<uint8_t*>(p)[4096], 0x7e);
    munmap(p, 1 << 20);
    (*pool)->Scrub(4096, 4096);
    EXPECT_EQ((*pool)->data()[4096], 0);

    // A live pool's name is refused (its lock is held).
    auto twice = SharedPool::Create(name, 1 << 20);
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.status().message().find("in use by a running process"), std::string::npos)
        << twice.status().ToString();
  }
  EXPECT_LT(shm_open(name.c_str(), O_RDONLY, 0), 0);  // unlinked
}

TEST(MemNodePool, ReplacesAnObjectLeftByADeadProcess) {
  const std::string name = PoolName() + "-stale";
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);  // nobody holds its lock
  ASSERT_GE(fd, 0);
  close(fd);
  auto pool = SharedPool::Create(name, 1 << 20);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_TRUE((*pool)->replaced_stale());
  EXPECT_FALSE(SharedPool::Create("no-slash", 4096).ok());
}

}  // namespace
}  // namespace pulse::memnode
