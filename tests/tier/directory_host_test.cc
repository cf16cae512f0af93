// The switch's page directory (src/switch/directory_host.h) without
// processes: which registrations join it and how, what a node that comes
// back may and may not change, and what the push member and the owner
// lookup say.
#include <gtest/gtest.h>

#include "switch/directory_host.h"

namespace pulse::switchd {
namespace {

using Code = Status::Code;
constexpr uint64_t kPage = 1 << 20;

uint64_t Far(uint32_t node, uint64_t offset) { return (uint64_t{node} + 1) * tier::kPageSpaceNodeSpan + offset; }

TEST(DirectoryHost, RackedNodesJoinWithEveryHomePageAtHome) {
  auto h = DirectoryHost::Make(kPage);
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->active());
  // No rack: nothing.
  EXPECT_FALSE(*h->Register(2, "", 8 * kPage));
  EXPECT_FALSE(h->active());
  // A pool of 4.5 pages: 4 frames, the tail unpaged.
  ASSERT_TRUE(*h->Register(1, "b", 4 * kPage + kPage / 2));
  ASSERT_TRUE(*h->Register(0, "a", 2 * kPage));
  EXPECT_TRUE(h->active());
  const tier::TierPush& s = h->state();
  EXPECT_EQ(s.racks.at("b"), 0u);  // ids in order of first registration
  EXPECT_EQ(s.racks.at("a"), 1u);
  EXPECT_EQ(s.directory.pages().size(), 6u);
  EXPECT_EQ(s.directory.FindNode(1)->frames, 4u);
  EXPECT_EQ(h->Owner(Far(1, 3 * kPage + 9)), 1u);
  EXPECT_EQ(h->Owner(Far(0, kPage)), 0u);
  EXPECT_FALSE(h->Owner(Far(1, 4 * kPage)));  // the tail
  EXPECT_FALSE(h->Owner(Far(2, 0)));          // no rack
  EXPECT_EQ(h->StatsJson()["moved"], 0u);
  // The push member decodes to the same directory.
  nlohmann::json table{{"version", 1}, {"nodes", nlohmann::json::array()}};
  table[tier::kTierPushMember] = h->PushMember();
  tier::PageLocator l;
  ASSERT_TRUE(*l.Adopt(table));
  EXPECT_EQ(l.version(), s.directory.version());
  EXPECT_EQ(l.Locate(Far(0, 5))->pool_offset, 5u);
}

TEST(DirectoryHost, ANodeThatComesBackKeepsItsFramesAndMayNotChangeThem) {
  auto h = DirectoryHost::Make(kPage);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(*h->Register(0, "a", 4 * kPage));
  const uint32_t v = h->state().directory.version();
  // A move the swap protocol made survives the node's return.
  const tier::PageId p0 = *h->state().geometry.PageOfNode(0, 0), p1 = *h->state().geometry.PageOfNode(0, 1);
  ASSERT_TRUE(h->mutable_directory()->Exchange(p0, p1).ok());
  EXPECT_EQ(h->StatsJson()["moved"], 2u);
  EXPECT_FALSE(*h->Register(0, "a", 4 * kPage));
  EXPECT_EQ(h->state().directory.version(), v + 1);
  EXPECT_EQ(h->StatsJson()["moved"], 2u);
  auto other_rack = h->Register(0, "b", 4 * kPage);
  EXPECT_EQ(other_rack.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(other_rack.status().message().find("node 0"), std::string::npos);
  EXPECT_EQ(h->Register(0, "a", 8 * kPage).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(h->state().racks.count("b"), 0u);  // a refused registration adds no rack
}

TEST(DirectoryHost, BadSizesAreRefusedByName) {
  auto bad = DirectoryHost::Make(3000);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--page-bytes"), std::string::npos);
  auto h = DirectoryHost::Make(kPage);
  ASSERT_TRUE(h.ok());
  auto small = h->Register(3, "a", kPage - 1);
  EXPECT_EQ(small.status().code(), Code::kInvalidArgument);
  EXPECT_NE(small.status().message().find("node 3"), std::string::npos);
  EXPECT_FALSE(h->active());
}

// A swap's result (tier::SwapCoordinator's directory) applied to the
// switch's: an exchange with the victim, a move into a free frame, nothing
// for pages already where it says, and an unknown page refused with the
// directory left as it was.
TEST(DirectoryHost, ApplyMovesPutsPagesInTheFramesASwapGaveThem) {
  auto h = DirectoryHost::Make(kPage);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(*h->Register(0, "a", 2 * kPage));
  ASSERT_TRUE(*h->Register(1, "b", 2 * kPage));
  const tier::PageId a0 = Far(0, 0) / kPage, b1 = Far(1, kPage) / kPage;
  tier::PageDirectory swapped = h->state().directory;
  ASSERT_TRUE(swapped.Exchange(b1, a0).ok());
  const uint32_t before = h->state().directory.version();
  const tier::PageId pages[] = {b1, a0};
  ASSERT_TRUE(*h->ApplyMoves(swapped, pages));
  EXPECT_GT(h->state().directory.version(), before);
  EXPECT_EQ(h->state().directory.Find(b1)->frame, (tier::Frame{0, 0}));
  EXPECT_EQ(h->state().directory.Find(a0)->frame, (tier::Frame{1, 1}));
  EXPECT_EQ(h->Owner(Far(1, kPage + 5)), 0u);
  EXPECT_EQ(h->StatsJson()["moved"], 2u);
  // Applied again: nothing changes.
  const uint32_t after = h->state().directory.version();
  EXPECT_FALSE(*h->ApplyMoves(swapped, pages));
  EXPECT_EQ(h->state().directory.version(), after);
  // Into a free frame.
  ASSERT_TRUE(h->mutable_directory()->Remove(a0).ok());  // frame {1, 1} is free now
  tier::PageDirectory moved = h->state().directory;
  const tier::PageId b0 = Far(1, 0) / kPage;
  ASSERT_TRUE(moved.Move(b0, tier::Frame{1, 1}).ok());
  const tier::PageId one[] = {b0};
  ASSERT_TRUE(*h->ApplyMoves(moved, one));
  EXPECT_EQ(h->state().directory.Find(b0)->frame, (tier::Frame{1, 1}));
  // A page the switch does not hold: NotFound, nothing changed.
  const tier::PageId unknown[] = {a0};
  const tier::PageDirectory kept = h->state().directory;
  EXPECT_EQ(h->ApplyMoves(swapped, unknown).status().code(), Code::kNotFound);
  EXPECT_EQ(h->state().directory.version(), kept.version());
}

}  // namespace
}  // namespace pulse::switchd
