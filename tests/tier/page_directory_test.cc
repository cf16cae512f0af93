// The page directory: placement and its errors, versions (every change and
// only a change), moves and exchanges against a plain reference, adoption,
// and the wire encoding: round trips and one rejected input per bad field.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "pulse/tier/page_directory.h"

namespace pulse::tier {
namespace {

using Code = Status::Code;

PageDirectory TwoRacks() {
  PageDirectory d;
  EXPECT_TRUE(d.AddMemoryNode(0, /*rack=*/0, 4).ok());
  EXPECT_TRUE(d.AddMemoryNode(1, /*rack=*/1, 4).ok());
  EXPECT_TRUE(d.AddMemoryNode(2, /*rack=*/1, 2).ok());
  return d;
}

TEST(PageDirectory, PlaceAndLookUp) {
  PageDirectory d = TwoRacks();
  ASSERT_TRUE(d.Place(100, {1, 3}).ok());
  auto e = d.Lookup(100);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, (PageEntry{100, {1, 3}, 1, 1}));
  EXPECT_EQ(d.PageAt({1, 3}), 100u);
  EXPECT_FALSE(d.PageAt({1, 2}));
  EXPECT_EQ(d.Lookup(101).status().code(), Code::kNotFound);
  EXPECT_EQ(d.Find(101), nullptr);
  EXPECT_EQ(d.PagesIn(1), std::vector<PageId>{100});
  EXPECT_TRUE(d.PagesIn(0).empty());
}

TEST(PageDirectory, EachBadPlacementHasItsCode) {
  PageDirectory d = TwoRacks();
  ASSERT_TRUE(d.Place(1, {0, 0}).ok());
  EXPECT_EQ(d.Place(1, {0, 1}).code(), Code::kAlreadyExists);
  EXPECT_EQ(d.Place(2, {9, 0}).code(), Code::kNotFound);
  EXPECT_EQ(d.Place(2, {0, 4}).code(), Code::kOutOfRange);
  EXPECT_EQ(d.Place(2, {0, 0}).code(), Code::kFailedPrecondition);
  EXPECT_EQ(d.AddMemoryNode(0, 3, 1).code(), Code::kAlreadyExists);
  EXPECT_EQ(d.AddMemoryNode(5, 3, 0).code(), Code::kInvalidArgument);
  EXPECT_EQ(d.Move(7, {0, 1}).code(), Code::kNotFound);
  EXPECT_EQ(d.Move(1, {0, 0}).code(), Code::kFailedPrecondition);
  EXPECT_EQ(d.Exchange(1, 1).code(), Code::kInvalidArgument);
  EXPECT_EQ(d.Exchange(1, 7).code(), Code::kNotFound);
  EXPECT_EQ(d.Remove(7).code(), Code::kNotFound);
}

TEST(PageDirectory, EveryChangeAndOnlyAChangeBumpsTheVersion) {
  PageDirectory d;
  EXPECT_EQ(d.version(), 0u);
  ASSERT_TRUE(d.AddMemoryNode(0, 0, 2).ok());
  ASSERT_TRUE(d.AddMemoryNode(1, 1, 2).ok());
  EXPECT_EQ(d.version(), 2u);
  ASSERT_TRUE(d.Place(10, {0, 0}).ok());
  ASSERT_TRUE(d.Place(11, {1, 0}).ok());
  EXPECT_EQ(d.version(), 4u);
  EXPECT_FALSE(d.Place(10, {0, 1}).ok());  // refused: no change
  EXPECT_FALSE(d.Move(10, {0, 0}).ok());
  EXPECT_EQ(d.version(), 4u);
  ASSERT_TRUE(d.Move(10, {1, 1}).ok());
  EXPECT_EQ(d.version(), 5u);
  EXPECT_EQ(*d.Find(10), (PageEntry{10, {1, 1}, 1, 2}));
  EXPECT_FALSE(d.PageAt({0, 0}));
  ASSERT_TRUE(d.Exchange(10, 11).ok());
  EXPECT_EQ(d.version(), 6u);
  EXPECT_EQ(*d.Find(10), (PageEntry{10, {1, 0}, 1, 3}));
  EXPECT_EQ(*d.Find(11), (PageEntry{11, {1, 1}, 1, 2}));
  ASSERT_TRUE(d.Remove(11).ok());
  EXPECT_EQ(d.version(), 7u);
  EXPECT_FALSE(d.PageAt({1, 1}));
}

TEST(PageDirectory, FreeFrameIsTheLowestGapOfTheRack) {
  PageDirectory d = TwoRacks();
  EXPECT_EQ(d.FreeFrame(1), (Frame{1, 0}));
  ASSERT_TRUE(d.Place(1, {1, 0}).ok());
  ASSERT_TRUE(d.Place(2, {1, 2}).ok());
  EXPECT_EQ(d.FreeFrame(1), (Frame{1, 1}));
  ASSERT_TRUE(d.Place(3, {1, 1}).ok());
  ASSERT_TRUE(d.Place(4, {1, 3}).ok());
  EXPECT_EQ(d.FreeFrame(1), (Frame{2, 0}));  // node 1 is full: the rack's next node
  ASSERT_TRUE(d.Place(5, {2, 0}).ok());
  ASSERT_TRUE(d.Place(6, {2, 1}).ok());
  EXPECT_FALSE(d.FreeFrame(1));
  EXPECT_FALSE(d.FreeFrame(7));  // no such rack
  EXPECT_EQ(d.FreeFrame(0), (Frame{0, 0}));
}

// Random places, moves, exchanges and removes; after each, every query
// agrees with a plain map of page -> frame.
TEST(PageDirectory, MatchesAPlainReferenceUnderRandomChanges) {
  PageDirectory d = TwoRacks();
  const std::map<uint32_t, std::pair<RackId, uint64_t>> nodes = {{0, {0, 4}}, {1, {1, 4}}, {2, {1, 2}}};
  std::map<PageId, std::pair<Frame, uint32_t>> ref;  // page -> frame, version
  std::mt19937_64 rng(7);
  auto random_frame = [&] {
    auto it = nodes.begin();
    std::advance(it, rng() % nodes.size());
    return Frame{it->first, rng() % it->second.second};
  };
  auto holder = [&](Frame f) -> std::optional<PageId> {
    for (auto& [p, fv] : ref)
      if (fv.first == f) return p;
    return std::nullopt;
  };
  for (int i = 0; i < 3000; ++i) {
    const PageId p = 1 + rng() % 12, q = 1 + rng() % 12;
    const Frame f = random_frame();
    const uint32_t before = d.version();
    bool changed = false;
    switch (rng() % 4) {
      case 0: {
        const bool ok = !ref.count(p) && !holder(f);
        ASSERT_EQ(d.Place(p, f).ok(), ok);
        if (ok) ref[p] = {f, 1};
        changed = ok;
        break;
      }
      case 1: {
        const bool ok = ref.count(p) && !holder(f);
        ASSERT_EQ(d.Move(p, f).ok(), ok);
        if (ok) ref[p] = {f, ref[p].second + 1};
        changed = ok;
        break;
      }
      case 2: {
        const bool ok = p != q && ref.count(p) && ref.count(q);
        ASSERT_EQ(d.Exchange(p, q).ok(), ok);
        if (ok) {
          std::swap(ref[p].first, ref[q].first);
          ++ref[p].second;
          ++ref[q].second;
        }
        changed = ok;
        break;
      }
      case 3: {
        const bool ok = ref.count(p) != 0;
        ASSERT_EQ(d.Remove(p).ok(), ok);
        ref.erase(p);
        changed = ok;
        break;
      }
    }
    ASSERT_EQ(d.version(), before + (changed ? 1 : 0));
    ASSERT_EQ(d.pages().size(), ref.size());
    for (auto& [page, fv] : ref) {
      const PageEntry* e = d.Find(page);
      ASSERT_NE(e, nullptr);
      ASSERT_EQ(e->frame, fv.first);
      ASSERT_EQ(e->version, fv.second);
      ASSERT_EQ(e->rack, nodes.at(fv.first.node).first);
    }
    for (RackId rack : {0u, 1u}) {
      std::optional<Frame> want;
      for (auto& [node, rf] : nodes) {
        if (rf.first != rack) continue;
        for (uint64_t idx = 0; idx < rf.second && !want; ++idx)
          if (!holder({node, idx})) want = Frame{node, idx};
        if (want) break;
      }
      ASSERT_EQ(d.FreeFrame(rack), want);
    }
    ASSERT_EQ(d.PageAt(f), holder(f));
    if (i % 100 == 0) {
      auto back = PageDirectory::Decode(d.Encode());
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      ASSERT_EQ(back->pages(), d.pages());
      ASSERT_EQ(back->version(), d.version());
    }
  }
}

// Damaged encodings (bytes flipped, dropped, cut short) either decode to a
// directory that encodes back to the same JSON value, or are
// InvalidArgument; never anything else.
TEST(PageDirectory, DamagedInputIsRefusedOrConsistent) {
  PageDirectory d = TwoRacks();
  ASSERT_TRUE(d.Place(1, {0, 0}).ok());
  ASSERT_TRUE(d.Place(2, {1, 3}).ok());
  ASSERT_TRUE(d.Place(3, {2, 1}).ok());
  const std::string good = d.Encode();
  std::mt19937_64 rng(99);
  int refused = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = good;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n && !text.empty(); ++k) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = "{}[]:,\"0123456789-.eabc"[rng() % 24]; break;
        case 1: text.erase(at, 1); break;
        case 2: text.resize(at); break;
      }
    }
    auto back = PageDirectory::Decode(text);
    if (!back.ok()) {
      ASSERT_EQ(back.status().code(), Status::Code::kInvalidArgument) << text;
      ++refused;
      continue;
    }
    auto again = PageDirectory::Decode(back->Encode());
    ASSERT_TRUE(again.ok()) << text;
    ASSERT_EQ(again->Encode(), back->Encode());
    for (const auto& [page, e] : back->pages()) ASSERT_EQ(back->PageAt(e.frame), page) << text;
  }
  EXPECT_GT(refused, 10000);
}

TEST(PageDirectory, AdoptsOnlyANewerVersion) {
  PageDirectory mine = TwoRacks();
  PageDirectory newer = mine;
  ASSERT_TRUE(newer.Place(1, {0, 0}).ok());
  PageDirectory older;
  EXPECT_FALSE(mine.Adopt(older));
  EXPECT_FALSE(mine.Adopt(mine));
  EXPECT_TRUE(mine.Adopt(newer));
  EXPECT_NE(mine.Find(1), nullptr);
  EXPECT_FALSE(mine.Adopt(TwoRacks()));  // a late, older push
  EXPECT_NE(mine.Find(1), nullptr);
}

TEST(PageDirectory, EncodingRoundTrips) {
  PageDirectory d = TwoRacks();
  ASSERT_TRUE(d.Place(1u << 30, {0, 1}).ok());
  ASSERT_TRUE(d.Place(~uint64_t{0}, {1, 3}).ok());
  ASSERT_TRUE(d.Place(5, {2, 0}).ok());
  ASSERT_TRUE(d.Exchange(5, 1u << 30).ok());
  auto back = PageDirectory::Decode(d.Encode());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->version(), d.version());
  EXPECT_EQ(back->nodes(), d.nodes());
  EXPECT_EQ(back->pages(), d.pages());
  EXPECT_EQ(back->Encode(), d.Encode());
  EXPECT_EQ(back->FreeFrame(1), d.FreeFrame(1));

  auto empty = PageDirectory::Decode(PageDirectory().Encode());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->version(), 0u);
}

// One malformed input per field and per inconsistency; each is
// InvalidArgument and names what was wrong.
TEST(PageDirectory, DecodeRejectsEachBadField) {
  const std::string node0 = R"({"node":0,"rack":0,"frames":2})";
  const std::string page1 = R"({"page":1,"node":0,"frame":0,"version":1})";
  auto doc = [](const std::string& version, const std::string& nodes, const std::string& pages) {
    return "{" + version + (version.empty() ? "" : ",") + nodes + (pages.empty() ? "" : ",") + pages + "}";
  };
  auto ok_doc = doc(R"("version":3)", R"("nodes":[)" + node0 + "]", R"("pages":[)" + page1 + "]");
  ASSERT_TRUE(PageDirectory::Decode(ok_doc).ok());
  struct Case {
    std::string text;
    std::string names;
  };
  const std::string v = R"("version":3)";
  const std::string n = R"("nodes":[)" + node0 + "]";
  const std::string p = R"("pages":[)" + page1 + "]";
  const std::vector<Case> cases = {
      {"{", "not JSON"},
      {"[]", "not an object"},
      {doc("", n, p), "version"},
      {doc(R"("version":-1)", n, p), "version"},
      {doc(R"("version":4294967296)", n, p), "version"},
      {doc(R"("version":"3")", n, p), "version"},
      {doc(v, R"("nodes":{})", p), "nodes"},
      {"{" + v + "," + p + "}", "nodes"},
      {doc(v, n, R"("pages":7)"), "pages"},
      {doc(v, n, ""), "pages"},
      {doc(v, R"("nodes":[1])", p), "node entry"},
      {doc(v, R"("nodes":[{"rack":0,"frames":2}])", p), "node must"},
      {doc(v, R"("nodes":[{"node":4294967296,"rack":0,"frames":2}])", p), "node must"},
      {doc(v, R"("nodes":[{"node":0,"rack":-1,"frames":2}])", p), "rack"},
      {doc(v, R"("nodes":[{"node":0,"frames":2}])", p), "rack"},
      {doc(v, R"("nodes":[{"node":0,"rack":0}])", p), "frames"},
      {doc(v, R"("nodes":[{"node":0,"rack":0,"frames":0}])", p), "frames"},
      {doc(v, R"("nodes":[{"node":0,"rack":0,"frames":1.5}])", p), "frames"},
      {doc(v, R"("nodes":[)" + node0 + "," + node0 + "]", p), "listed twice"},
      {doc(v, n, R"("pages":["x"])"), "page entry"},
      {doc(v, n, R"("pages":[{"node":0,"frame":0,"version":1}])"), "page must"},
      {doc(v, n, R"("pages":[{"page":-1,"node":0,"frame":0,"version":1}])"), "page must"},
      {doc(v, n, R"("pages":[{"page":1,"node":true,"frame":0,"version":1}])"), "node must"},
      {doc(v, n, R"("pages":[{"page":1,"node":0,"version":1}])"), "frame must"},
      {doc(v, n, R"("pages":[{"page":1,"node":0,"frame":0}])"), "version"},
      {doc(v, n, R"("pages":[{"page":1,"node":0,"frame":0,"version":0}])"), "version"},
      {doc(v, n, R"("pages":[{"page":1,"node":0,"frame":0,"version":4294967296}])"), "version"},
      {doc(v, n, R"("pages":[)" + page1 + "," + page1 + "]"), "listed twice"},
      {doc(v, n, R"("pages":[{"page":1,"node":9,"frame":0,"version":1}])"), "no memory node 9"},
      {doc(v, n, R"("pages":[{"page":1,"node":0,"frame":2,"version":1}])"), "out of range"},
      {doc(v, n, R"("pages":[)" + page1 + R"(,{"page":2,"node":0,"frame":0,"version":1}])"), "holds page 1"},
  };
  for (const Case& c : cases) {
    auto d = PageDirectory::Decode(c.text);
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_EQ(d.status().code(), Code::kInvalidArgument) << c.text;
    EXPECT_NE(d.status().message().find(c.names), std::string::npos) << c.text << " -> " << d.status().message();
  }
}

}  // namespace
}  // namespace pulse::tier
