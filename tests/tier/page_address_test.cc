// Global page addresses: the geometry's limits, (page, offset) <-> far
// address against plain arithmetic, and that pages land in the memory
// nodes' spans of pulse/cluster.h.
#include <gtest/gtest.h>

#include <random>

#include "pulse/cluster.h"
#include "pulse/tier/page_address.h"

namespace pulse::tier {
namespace {

static_assert(kPageSpaceNodeSpan == kFarSpan, "tier's node span must be pulse/cluster.h's kFarSpan");

TEST(PageAddress, DefaultIsTwoMegabytes) {
  PageGeometry g;
  EXPECT_EQ(g.page_size(), 2u << 20);
  EXPECT_EQ(g.shift(), 21u);
}

TEST(PageAddress, PageSizeMustBeAPowerOfTwoFromFourKilobytesToOneGigabyte) {
  for (uint64_t ok : {uint64_t{4096}, uint64_t{8192}, uint64_t{2} << 20, uint64_t{1} << 30}) {
    auto g = PageGeometry::Make(ok);
    ASSERT_TRUE(g.ok()) << ok;
    EXPECT_EQ(g->page_size(), ok);
  }
  for (uint64_t bad : {uint64_t{0}, uint64_t{2048}, uint64_t{4097}, uint64_t{3} << 20, uint64_t{1} << 31}) {
    auto g = PageGeometry::Make(bad);
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_EQ(g.status().code(), Status::Code::kInvalidArgument);
  }
}

TEST(PageAddress, EncodeAndDecodeMatchPlainArithmetic) {
  std::mt19937_64 rng(16);
  for (unsigned shift = 12; shift <= 30; shift += 3) {
    auto g = PageGeometry::Make(uint64_t{1} << shift);
    ASSERT_TRUE(g.ok());
    const uint64_t size = uint64_t{1} << shift;
    for (int i = 0; i < 2000; ++i) {
      const uint64_t addr = kFarSpan + rng() % (~uint64_t{0} - kFarSpan);
      auto a = g->Decode(addr);
      ASSERT_TRUE(a.ok());
      EXPECT_EQ(a->page, addr / size);
      EXPECT_EQ(a->offset, addr % size);
      auto back = g->Encode(*a);
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(*back, addr);
    }
  }
}

TEST(PageAddress, PagesLieInTheirHomeNodesSpan) {
  for (uint64_t size : {uint64_t{4096}, uint64_t{2} << 20}) {
    auto g = PageGeometry::Make(size);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(g->first_page() * size, FarBase(0));
    for (uint32_t node : {0u, 1u, 7u, 1000u}) {
      for (uint64_t index : {uint64_t{0}, uint64_t{5}, g->pages_per_node() - 1}) {
        auto p = g->PageOfNode(node, index);
        ASSERT_TRUE(p.ok());
        auto addr = g->Encode({*p, size - 1});
        ASSERT_TRUE(addr.ok());
        EXPECT_EQ(*addr, FarBase(node) + index * size + size - 1);
        EXPECT_EQ(NodeOfFarAddress(*addr), node);
        auto home = g->HomeNode(*p);
        ASSERT_TRUE(home.ok());
        EXPECT_EQ(*home, node);
      }
    }
  }
}

TEST(PageAddress, EncodeRejectsAnOffsetOutsideThePageAndABadPageId) {
  auto g = PageGeometry::Make(4096);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->Encode({g->first_page(), 4096}).status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(g->Encode({g->first_page(), 4095}).ok());
  EXPECT_EQ(g->Encode({g->first_page() - 1, 0}).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(g->Encode({g->last_page() + 1, 0}).status().code(), Status::Code::kInvalidArgument);
  auto top = g->Encode({g->last_page(), 4095});
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(*top, ~uint64_t{0});
}

TEST(PageAddress, DecodeRejectsAddressesBelowEveryNode) {
  PageGeometry g;
  EXPECT_EQ(g.Decode(0).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(g.Decode(FarBase(0) - 1).status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(g.Decode(FarBase(0)).ok());
}

TEST(PageAddress, PageOfNodeRejectsAnIndexPastTheSpanAndANodeBeyondTheAddressSpace) {
  PageGeometry g;
  EXPECT_EQ(g.PageOfNode(0, g.pages_per_node()).status().code(), Status::Code::kOutOfRange);
  const uint32_t last_node = (1u << 24) - 2;  // its span ends at 2^64
  auto last = g.PageOfNode(last_node, g.pages_per_node() - 1);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, g.last_page());
  EXPECT_EQ(g.PageOfNode(last_node + 1, 0).status().code(), Status::Code::kOutOfRange);
  EXPECT_EQ(g.HomeNode(g.first_page() - 1).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace pulse::tier
