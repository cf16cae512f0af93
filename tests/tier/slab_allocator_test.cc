// The slab allocator against a reference: random allocations and frees on
// two racks, checking after each step that live objects never overlap,
// are aligned to their class and lie in the allocator's pages, that the
// class is the smallest power of two that fits, that a remote page is used
// only when no local page could serve, and exhaustion, release and the
// bad-free errors.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "pulse/tier/slab_allocator.h"

namespace pulse::tier {
namespace {

using Code = Status::Code;

struct Fixture {
  PageGeometry geometry = *PageGeometry::Make(4096);
  PageDirectory directory;
  std::vector<PageId> pages;
  // `per_rack` pages in each of racks 0 and 1 (node r holds rack r's).
  explicit Fixture(uint64_t per_rack) {
    EXPECT_TRUE(directory.AddMemoryNode(0, 0, per_rack + 1).ok());
    EXPECT_TRUE(directory.AddMemoryNode(1, 1, per_rack + 1).ok());
    for (uint32_t node = 0; node < 2; ++node)
      for (uint64_t i = 0; i < per_rack; ++i) {
        PageId p = *geometry.PageOfNode(node, i);
        EXPECT_TRUE(directory.Place(p, {node, i}).ok());
        pages.push_back(p);
      }
  }
  SlabAllocator Allocator(uint64_t min_class = 16) {
    SlabAllocator a = *SlabAllocator::Make(geometry, &directory, min_class);
    for (PageId p : pages) EXPECT_TRUE(a.AddPage(p).ok());
    return a;
  }
};

TEST(SlabAllocator, ClassIsTheSmallestPowerOfTwoThatFits) {
  Fixture f(1);
  SlabAllocator a = f.Allocator();
  EXPECT_EQ(*a.ClassOf(1), 16u);
  EXPECT_EQ(*a.ClassOf(16), 16u);
  EXPECT_EQ(*a.ClassOf(17), 32u);
  EXPECT_EQ(*a.ClassOf(1000), 1024u);
  EXPECT_EQ(*a.ClassOf(4096), 4096u);
  EXPECT_EQ(a.ClassOf(0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(a.ClassOf(4097).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(a.Allocate(4097, 0).status().code(), Code::kInvalidArgument);
  for (uint64_t bad : {uint64_t{0}, uint64_t{4}, uint64_t{24}, uint64_t{8192}})
    EXPECT_EQ(SlabAllocator::Make(f.geometry, &f.directory, bad).status().code(), Code::kInvalidArgument) << bad;
  EXPECT_TRUE(SlabAllocator::Make(f.geometry, &f.directory, 8).ok());
}

TEST(SlabAllocator, AddPageNeedsADirectoryPageOnce) {
  Fixture f(1);
  SlabAllocator a = *SlabAllocator::Make(f.geometry, &f.directory);
  EXPECT_EQ(a.AddPage(12345).code(), Code::kNotFound);
  ASSERT_TRUE(a.AddPage(f.pages[0]).ok());
  EXPECT_EQ(a.AddPage(f.pages[0]).code(), Code::kAlreadyExists);
  EXPECT_EQ(a.page_count(), 1u);
}

TEST(SlabAllocator, MatchesAReferenceUnderRandomAllocationsAndFrees) {
  Fixture f(3);
  SlabAllocator a = f.Allocator();
  std::map<uint64_t, uint64_t> live;  // addr -> class
  std::mt19937_64 rng(11);
  const uint64_t ps = f.geometry.page_size();
  // A page could serve class c for rack r if it is in rack r and is empty
  // or holds only class-c objects with room for one more.
  auto could_serve = [&](PageId page, uint64_t c) {
    uint64_t used = 0, klass = 0;
    for (auto& [addr, k] : live)
      if (addr / ps == page) {
        ++used;
        klass = k;
      }
    return used == 0 || (klass == c && used < ps / c);
  };
  int remote = 0, exhausted = 0;
  for (int i = 0; i < 6000; ++i) {
    if (live.empty() || rng() % 5 < 3) {
      const uint64_t size = rng() % 3 == 0 ? 1 + rng() % 4096 : 1 + rng() % 200;
      const RackId rack = rng() % 2;
      const uint64_t c = *a.ClassOf(size);
      auto addr = a.Allocate(size, rack);
      if (!addr.ok()) {
        ASSERT_EQ(addr.status().code(), Code::kResourceExhausted);
        for (PageId p : f.pages) ASSERT_FALSE(could_serve(p, c)) << "page " << p << " had room";
        ++exhausted;
        continue;
      }
      ASSERT_EQ(*addr % c, 0u) << "alignment";
      const PageId page = *addr / ps;
      ASSERT_TRUE(std::find(f.pages.begin(), f.pages.end(), page) != f.pages.end());
      ASSERT_TRUE(could_serve(page, c));
      // No overlap: the neighbours end before it and start after it.
      auto next = live.lower_bound(*addr);
      if (next != live.end()) {
        ASSERT_GE(next->first, *addr + c);
      }
      if (next != live.begin()) {
        ASSERT_LE(std::prev(next)->first + std::prev(next)->second, *addr);
      }
      if (f.directory.Find(page)->rack != rack) {
        ++remote;
        for (PageId p : f.pages) {
          if (f.directory.Find(p)->rack == rack) {
            ASSERT_FALSE(could_serve(p, c)) << "local page " << p << " had room";
          }
        }
      }
      live[*addr] = c;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ASSERT_TRUE(a.Free(it->first).ok());
      live.erase(it);
    }
    std::vector<PageId> empty;
    for (PageId p : f.pages) {
      bool used = false;
      for (auto& [addr, k] : live) used |= addr / ps == p;
      if (!used) empty.push_back(p);
    }
    std::sort(empty.begin(), empty.end());
    ASSERT_EQ(a.EmptyPages(), empty);
  }
  EXPECT_GT(remote, 0);  // the run did reach both preferences
  EXPECT_GT(exhausted, 0);
}

TEST(SlabAllocator, PrefersTheLocalRackThenARemoteOneAndFollowsMovedPages) {
  Fixture f(1);  // one page per rack
  SlabAllocator a = f.Allocator();
  const uint64_t ps = f.geometry.page_size();
  auto rack_of = [&](uint64_t addr) { return f.directory.Find(addr / ps)->rack; };
  auto first = a.Allocate(2048, 0);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(rack_of(*first), 0u);
  auto second = a.Allocate(2048, 0);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(rack_of(*second), 0u);
  auto third = a.Allocate(2048, 0);  // rack 0 is full: rack 1's page
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(rack_of(*third), 1u);
  EXPECT_EQ(a.Allocate(4096, 0).status().code(), Code::kResourceExhausted);
  // Rack 0's page moves to rack 1 and rack 1's to rack 0: the free slot of
  // the page now in rack 0 is what rack 0 gets.
  ASSERT_TRUE(f.directory.Exchange(f.pages[0], f.pages[1]).ok());
  auto fourth = a.Allocate(2048, 0);
  ASSERT_TRUE(fourth.ok());
  EXPECT_EQ(*fourth / ps, f.pages[1]);
}

TEST(SlabAllocator, FreedSlotsAreReusedAndAnEmptyPageCanBeReleased) {
  Fixture f(1);
  SlabAllocator a = f.Allocator();
  std::vector<uint64_t> objs;
  for (int i = 0; i < 4096 / 64; ++i) objs.push_back(*a.Allocate(64, 0));  // fills rack 0's page
  EXPECT_EQ(objs.back() / 4096, f.pages[0]);
  EXPECT_EQ(a.Release(f.pages[0]).code(), Code::kFailedPrecondition);
  ASSERT_TRUE(a.Free(objs[10]).ok());
  EXPECT_EQ(*a.Allocate(64, 0), objs[10]);
  for (uint64_t o : objs) ASSERT_TRUE(a.Free(o).ok());
  EXPECT_EQ(a.EmptyPages(), (std::vector<PageId>{f.pages[0], f.pages[1]}));
  // Empty again, so another class may carve it.
  auto big = a.Allocate(4096, 0);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(*big, f.pages[0] * 4096);
  ASSERT_TRUE(a.Free(*big).ok());
  ASSERT_TRUE(a.Release(f.pages[0]).ok());
  EXPECT_EQ(a.Release(f.pages[0]).code(), Code::kNotFound);
  EXPECT_EQ(a.page_count(), 1u);
  auto after = a.Allocate(64, 0);  // released: rack 0 has no page left
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after / 4096, f.pages[1]);
}

TEST(SlabAllocator, BadFreesAreRefused) {
  Fixture f(1);
  SlabAllocator a = f.Allocator();
  const uint64_t x = *a.Allocate(100, 0);  // class 128
  EXPECT_EQ(a.Free(x + 8).code(), Code::kInvalidArgument);     // inside a slot
  EXPECT_EQ(a.Free(x + 128).code(), Code::kInvalidArgument);   // never handed out
  EXPECT_EQ(a.Free(f.pages[1] * 4096).code(), Code::kInvalidArgument);  // page not carved
  EXPECT_EQ(a.Free(12345 * 4096ull * 1024 * 1024).code(), Code::kInvalidArgument);  // not our page
  EXPECT_EQ(a.Free(100).code(), Code::kInvalidArgument);  // below every node
  ASSERT_TRUE(a.Free(x).ok());
  EXPECT_EQ(a.Free(x).code(), Code::kInvalidArgument);  // double free
}

}  // namespace
}  // namespace pulse::tier
