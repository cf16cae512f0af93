// The page directory as the switch pushes it inside the routing table
// (src/tier/tier_push.h): round trips, a receiver keeps only newer
// directories (independently of the routing table's version), a malformed
// member is refused naming its field and changes nothing, and Locate says
// where an address's page is: home, moved, or unpaged.
#include <gtest/gtest.h>

#include "tier/tier_push.h"

namespace pulse::tier {
namespace {

using nlohmann::json;
using Code = Status::Code;

constexpr uint64_t kPage = 64 << 10;

// Nodes 0 (rack 0) and 1 (rack 1), 4 frames each, every home page at home.
TierPush TwoRacks() {
  TierPush p{*PageGeometry::Make(kPage), {{"a", 0}, {"b", 1}}, {}};
  for (uint32_t node = 0; node < 2; ++node) {
    EXPECT_TRUE(p.directory.AddMemoryNode(node, node, 4).ok());
    for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(p.directory.Place(*p.geometry.PageOfNode(node, i), {node, i}).ok());
  }
  return p;
}

uint64_t Far(uint32_t node, uint64_t offset) { return (uint64_t{node} + 1) * kPageSpaceNodeSpan + offset; }

json TableWith(const TierPush& p) {
  json table{{"version", 3}, {"nodes", json::array()}};
  table[kTierPushMember] = EncodeTierPush(p);
  return table;
}

TEST(TierPush, RoundTrips) {
  TierPush p = TwoRacks();
  ASSERT_TRUE(p.directory.Exchange(*p.geometry.PageOfNode(0, 1), *p.geometry.PageOfNode(1, 2)).ok());
  auto back = DecodeTierPush(TableWith(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->geometry.page_size(), kPage);
  EXPECT_EQ((*back)->racks, p.racks);
  EXPECT_EQ((*back)->directory.Encode(), p.directory.Encode());
}

TEST(TierPush, ATableWithoutTheMemberHasNoDirectory) {
  auto d = DecodeTierPush(json{{"version", 1}, {"nodes", json::array()}});
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->has_value());
  PageLocator l;
  auto adopted = l.Adopt(json{{"version", 1}, {"nodes", json::array()}});
  ASSERT_TRUE(adopted.ok());
  EXPECT_FALSE(*adopted);
  EXPECT_EQ(l.version(), 0u);
  EXPECT_FALSE(l.Locate(Far(0, 0)));
}

TEST(TierPush, EachBadFieldIsRefusedByName) {
  const json good = TableWith(TwoRacks());
  auto refused = [&](const std::function<void(json&)>& damage, const std::string& field) {
    json t = good;
    damage(t);
    auto d = DecodeTierPush(t);
    ASSERT_FALSE(d.ok()) << field;
    EXPECT_EQ(d.status().code(), Code::kInvalidArgument) << field;
    EXPECT_NE(d.status().message().find(field), std::string::npos) << d.status().message();
  };
  refused([](json& t) { t[kTierPushMember] = 7; }, "not an object");
  refused([](json& t) { t[kTierPushMember].erase("page_bytes"); }, "page_bytes");
  refused([](json& t) { t[kTierPushMember]["page_bytes"] = 5000u; }, "page size 5000");
  refused([](json& t) { t[kTierPushMember]["racks"] = json::array(); }, "racks");
  refused([](json& t) { t[kTierPushMember]["racks"]["c"] = -1; }, "rack 'c'");
  refused([](json& t) { t[kTierPushMember].erase("directory"); }, "directory");
  refused([](json& t) { t[kTierPushMember]["directory"]["pages"][0]["frame"] = 99u; }, "out of range");
}

TEST(TierPush, ALocatorKeepsOnlyNewerDirectories) {
  TierPush p = TwoRacks();
  PageLocator l;
  ASSERT_TRUE(*l.Adopt(TableWith(p)));
  const uint32_t v = l.version();
  EXPECT_EQ(v, p.directory.version());
  // The same push again, or an older one arriving late: kept as is.
  EXPECT_FALSE(*l.Adopt(TableWith(p)));
  TierPush newer = p;
  const PageId moved = *p.geometry.PageOfNode(0, 3);
  ASSERT_TRUE(newer.directory.Exchange(moved, *p.geometry.PageOfNode(1, 0)).ok());
  ASSERT_TRUE(*l.Adopt(TableWith(newer)));
  EXPECT_EQ(l.Locate(Far(0, 3 * kPage))->node, 1u);
  EXPECT_FALSE(*l.Adopt(TableWith(p)));
  EXPECT_EQ(l.Locate(Far(0, 3 * kPage))->node, 1u);
  // A malformed push is an error and leaves the copy alone.
  json bad = TableWith(newer);
  bad[kTierPushMember]["directory"]["version"] = "x";
  EXPECT_EQ(l.Adopt(bad).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(l.version(), newer.directory.version());
  l.Reset();
  EXPECT_EQ(l.version(), 0u);
}

TEST(TierPush, LocateSaysWhereAPageIsNow) {
  TierPush p = TwoRacks();
  const PageId a1 = *p.geometry.PageOfNode(0, 1), b2 = *p.geometry.PageOfNode(1, 2);
  ASSERT_TRUE(p.directory.Exchange(a1, b2).ok());
  PageLocator l;
  ASSERT_TRUE(*l.Adopt(TableWith(p)));
  // An unmoved page: at home, pool offset = far offset.
  auto home = l.Locate(Far(0, 2 * kPage + 17));
  ASSERT_TRUE(home);
  EXPECT_EQ(home->node, 0u);
  EXPECT_EQ(home->pool_offset, 2 * kPage + 17);
  EXPECT_TRUE(home->home);
  EXPECT_EQ(home->page_version, 1u);
  // Page 1 of node 0 is in frame 2 of node 1, and the other way round.
  auto moved = l.Locate(Far(0, kPage + 5));
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->page, a1);
  EXPECT_EQ(moved->node, 1u);
  EXPECT_EQ(moved->pool_offset, 2 * kPage + 5);
  EXPECT_FALSE(moved->home);
  EXPECT_EQ(moved->page_version, 2u);
  auto victim = l.Locate(Far(1, 2 * kPage + kPage - 1));
  ASSERT_TRUE(victim);
  EXPECT_EQ(victim->node, 0u);
  EXPECT_EQ(victim->pool_offset, kPage + kPage - 1);
  // Past a node's frames, below FarBase(0), a node without frames: unpaged.
  EXPECT_FALSE(l.Locate(Far(0, 4 * kPage)));
  EXPECT_FALSE(l.Locate(4096));
  EXPECT_FALSE(l.Locate(Far(5, 0)));
  // OwnerOf: the directory's node, else the fallback's answer.
  auto fallback = [](uint64_t) -> std::optional<uint32_t> { return 42; };
  EXPECT_EQ(l.OwnerOf(Far(0, kPage), fallback), 1u);
  EXPECT_EQ(l.OwnerOf(Far(0, 4 * kPage), fallback), 42u);
}

}  // namespace
}  // namespace pulse::tier
