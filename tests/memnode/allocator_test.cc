// The memory node's pool allocator and shared-memory pool.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

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

std::string PoolName() { return "/pulse-pool-test-" + std::to_string(getpid()); }

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
