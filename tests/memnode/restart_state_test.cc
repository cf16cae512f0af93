// What a memory node restarted after a crash gets back: the pool object it
// left behind (SharedPool::CreateOrReattach), its allocations
// (AllocationJournal) and the allocator rebuilt from them
// (PoolAllocator::Restore).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "memnode/allocation_journal.h"
#include "memnode/allocator.h"
#include "memnode/pool.h"

namespace pulse::memnode {
namespace {

constexpr uint64_t kUnit = 64 * 1024;

std::string Name(const char* what) { return "/pulse-restart-test-" + std::to_string(getpid()) + "-" + what; }

// An object as a process that died leaves it: sized, written, unlocked.
void LeaveObject(const std::string& name, size_t bytes, uint8_t fill) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, fill, bytes);
  munmap(p, bytes);
  close(fd);
}

TEST(MemNodeRestart, ReattachesADeadNodesPoolWithItsBytes) {
  const std::string name = Name("same");
  // Pool, metadata, and the rack owner page and gates at the end (memnode/pool.h).
  LeaveObject(name, (1 << 20) + 4096 + rack::TrailerBytes(1 << 20), 0x5c);
  {
    auto pool = SharedPool::CreateOrReattach(name, 1 << 20, 4096);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    EXPECT_TRUE((*pool)->reattached());
    EXPECT_FALSE((*pool)->replaced_stale());
    EXPECT_EQ((*pool)->data()[12345], 0x5c);
    EXPECT_EQ((*pool)->metadata()[100], 0x5c);
    EXPECT_EQ((*pool)->metadata_size(), 4096u);
    // Live: nobody else may take it.
    EXPECT_FALSE(SharedPool::CreateOrReattach(name, 1 << 20, 4096).ok());
  }
  EXPECT_LT(shm_open(name.c_str(), O_RDONLY, 0), 0);  // a clean exit still unlinks
}

TEST(MemNodeRestart, ReplacesAnObjectOfAnotherSize) {
  const std::string name = Name("other");
  LeaveObject(name, 1 << 20, 0x5c);  // no metadata area: another configuration
  auto pool = SharedPool::CreateOrReattach(name, 1 << 20, 4096);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_FALSE((*pool)->reattached());
  EXPECT_TRUE((*pool)->replaced_stale());
  EXPECT_EQ((*pool)->data()[12345], 0);
}

TEST(MemNodeRestart, JournalKeepsLiveAllocationsOfItsOwnPoolOnly) {
  const uint64_t pool_bytes = 16 * kUnit;
  std::vector<uint8_t> area(AllocationJournal::BytesFor(pool_bytes, kUnit));
  {
    AllocationJournal j(area.data(), area.size(), pool_bytes, kUnit, 3);
    EXPECT_FALSE(j.Load().ok());  // never formatted
    j.Format();
    ASSERT_TRUE(j.Load().ok());
    EXPECT_TRUE(j.Load()->empty());
    j.Record({0, kUnit, 7, 3});
    j.Record({2 * kUnit, 3 * kUnit, 8, 1});
    j.Record({6 * kUnit, kUnit, 9, 3});
    j.Erase(0);
  }
  AllocationJournal again(area.data(), area.size(), pool_bytes, kUnit, 3);
  auto entries = again.Load();
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].offset, 2 * kUnit);
  EXPECT_EQ((*entries)[0].length, 3 * kUnit);
  EXPECT_EQ((*entries)[0].tenant, 8u);
  EXPECT_EQ((*entries)[0].perms, 1u);
  EXPECT_EQ((*entries)[1].offset, 6 * kUnit);
  // Another node id, pool size or granularity: not this pool's journal.
  EXPECT_FALSE(AllocationJournal(area.data(), area.size(), pool_bytes, kUnit, 4).Load().ok());
  EXPECT_FALSE(AllocationJournal(area.data(), area.size(), pool_bytes / 2, kUnit, 3).Load().ok());
}

TEST(MemNodeRestart, JournalKeepsLifetimesAndRoots) {
  const uint64_t pool_bytes = 16 * kUnit;
  std::vector<uint8_t> area(AllocationJournal::BytesFor(pool_bytes, kUnit));
  {
    AllocationJournal j(area.data(), area.size(), pool_bytes, kUnit, 3);
    j.Format();
    EXPECT_TRUE(j.LoadRoots().empty());
    j.Record({0, kUnit, 7, 3, Lifetime::kSession, 0x1234});
    j.Record({kUnit, 2 * kUnit, 7, 3, Lifetime::kDurable, 5});
    j.RecordRoot({5, 7, 0x20000000100ull, "orders"});
    j.RecordRoot({6, 8, 0, "gone"});
    j.EraseRoot(6);
    // A session allocation made durable: recorded again in place.
    j.Record({0, kUnit, 7, 3, Lifetime::kDurable, 5});
  }
  AllocationJournal again(area.data(), area.size(), pool_bytes, kUnit, 3);
  auto entries = again.Load();
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 2u);
  for (const JournalEntry& e : *entries) {
    EXPECT_EQ(e.lifetime, Lifetime::kDurable);
    EXPECT_EQ(e.owner, 5u);
  }
  auto roots = again.LoadRoots();
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0].slot, 5u);
  EXPECT_EQ(roots[0].tenant, 7u);
  EXPECT_EQ(roots[0].addr, 0x20000000100ull);
  EXPECT_EQ(roots[0].name, "orders");
  // A session allocation keeps its session id.
  {
    AllocationJournal j(area.data(), area.size(), pool_bytes, kUnit, 3);
    j.Record({4 * kUnit, kUnit, 9, 1, Lifetime::kSession, 0x3fffffffffffffffull});
  }
  entries = again.Load();
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[2].lifetime, Lifetime::kSession);
  EXPECT_EQ((*entries)[2].owner, 0x3fffffffffffffffull);
}

TEST(MemNodeRestart, AllocatorRestoresRangesAndAllocatesAroundThem) {
  PoolAllocator a(8 * kUnit, kUnit);
  ASSERT_TRUE(a.Restore(kUnit, 2 * kUnit).ok());
  ASSERT_TRUE(a.Restore(5 * kUnit, kUnit).ok());
  EXPECT_EQ(a.used(), 3 * kUnit);
  EXPECT_EQ(a.allocations(), 2u);
  EXPECT_FALSE(a.Restore(2 * kUnit, kUnit).ok());   // overlaps
  EXPECT_FALSE(a.Restore(7 * kUnit, 2 * kUnit).ok());  // beyond the pool
  EXPECT_FALSE(a.Restore(100, kUnit).ok());          // unaligned
  auto x = a.Allocate(kUnit);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->offset, 0u);
  auto y = a.Allocate(2 * kUnit);  // the first hole of two units: [3, 5)
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->offset, 3 * kUnit);
  ASSERT_TRUE(a.Free(kUnit).ok());  // a restored allocation frees like any other
  EXPECT_EQ(a.used(), 4 * kUnit);
}

}  // namespace
}  // namespace pulse::memnode
