// The swap protocol's branches, each with an injected clock and the fake
// racks: migration after the 5th access with later accesses local, the
// duplicate requests that cause one swap, victim eviction (and the order
// of its steps), abort on a hot victim, reject and read-only copy against
// the owner's hotness, the trivial cases, and failed steps undone.
#include <gtest/gtest.h>

#include "tier/fake_racks.h"

namespace pulse::tier {
namespace {

using testing::FakeRacks;
using Code = Status::Code;
constexpr RackId kA = 0, kB = 1;

std::vector<uint8_t> Fill(PageId page) {
  std::vector<uint8_t> bytes(4096);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(page * 31 + i * 7);
  return bytes;
}

struct Swaps : ::testing::Test {
  PageGeometry geometry = *PageGeometry::Make(4096);
  ManualClock clock;
  // Rack A: node 0 with `a_frames` frames; rack B: node 1 with 4.
  std::unique_ptr<FakeRacks> racks;
  std::unique_ptr<SwapCoordinator> coordinator;
  void Build(uint64_t a_frames) {
    racks = std::make_unique<FakeRacks>(geometry, std::vector<testing::FakeRackLayout>{{kA, 0, a_frames}, {kB, 1, 4}},
                                        /*cpu_nodes_per_rack=*/2, HotnessParams{}, &clock);
    coordinator = std::make_unique<SwapCoordinator>(&racks->directory, racks.get());
  }
  PageId Page(uint32_t node, uint64_t i) { return *geometry.PageOfNode(node, i); }
  PageId Put(uint32_t node, uint64_t frame) {
    const PageId p = Page(node, frame);
    racks->PlacePage(p, {node, frame}, Fill(p));
    return p;
  }
  PageHeat Touch(RackId rack, PageId page, AccessKind kind, int cpu = 0) {
    uint8_t b = 0;
    auto h = kind == AccessKind::kRead ? racks->Read(rack, cpu, page * 4096 + 5, &b, 1)
                                       : racks->Write(rack, cpu, page * 4096 + 5, &b, 1);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    return h.ok() ? *h : PageHeat{};
  }
  std::vector<uint8_t> Expected(PageId page, uint8_t at5) {
    std::vector<uint8_t> bytes = Fill(page);
    bytes[5] = at5;
    return bytes;
  }
};

// The rule end to end: rack A reads a page of rack B; on the access
// that makes it hot (the 5th) A asks for it, and the page moves into A's
// free frame; A's later accesses are local.
TEST_F(Swaps, APageUsedOnlyByRackAMigratesAfterItsFifthAccess) {
  Build(/*a_frames=*/2);
  const PageId p = Put(1, 0);
  Put(0, 0);  // A's other frame stays free
  for (int i = 1; i <= 5; ++i) {
    EXPECT_EQ(racks->published().Find(p)->rack, kB) << "before access " << i;
    const PageHeat h = Touch(kA, p, AccessKind::kRead, i % 2);
    EXPECT_EQ(h.hot, i == 5) << "access " << i;  // 5 back-to-back: hotness 5 > H_p = 4
    if (h.hot) {
      ASSERT_TRUE(coordinator->Submit({p, kA}));
    }
  }
  auto r = coordinator->ProcessNext();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, SwapOutcome::kMoved);
  EXPECT_EQ(racks->published().Find(p)->rack, kA);
  EXPECT_EQ(racks->published().Find(p)->frame, (Frame{0, 1}));
  EXPECT_EQ(racks->published().Find(p)->version, 2u);
  EXPECT_EQ(racks->PageBytes(p), Fill(p));
  EXPECT_EQ(racks->remote_accesses, 5u);
  EXPECT_EQ(racks->local_accesses, 0u);
  for (int i = 0; i < 10; ++i) Touch(kA, p, AccessKind::kRead);
  EXPECT_EQ(racks->local_accesses, 10u);
  EXPECT_EQ(racks->remote_accesses, 5u);
  EXPECT_EQ(racks->transfers, 1);
}

TEST_F(Swaps, FourAccessesDoNotMakeItHot) {
  Build(2);
  const PageId p = Put(1, 0);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(Touch(kA, p, AccessKind::kRead).hot);
  clock.Advance(101);  // over T_l: the count starts over
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(Touch(kA, p, AccessKind::kRead).hot);
  EXPECT_TRUE(Touch(kA, p, AccessKind::kRead).hot);
}

TEST_F(Swaps, DuplicateRequestsCauseOneSwap) {
  Build(2);
  const PageId p = Put(1, 0);
  for (int i = 0; i < 5; ++i) Touch(kA, p, AccessKind::kWrite);
  EXPECT_TRUE(coordinator->Submit({p, kA}));
  EXPECT_FALSE(coordinator->Submit({p, kA}));
  EXPECT_FALSE(coordinator->Submit({p, kB}));
  EXPECT_EQ(coordinator->queued(), 1u);
  auto r = coordinator->ProcessNext();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, SwapOutcome::kMoved);
  EXPECT_EQ(coordinator->ProcessNext().status().code(), Code::kNotFound);  // nothing else queued
  EXPECT_EQ(racks->transfers, 1);
  EXPECT_EQ(racks->commits, 1);
  // Once served, the page may be asked for again.
  EXPECT_TRUE(coordinator->Submit({p, kA}));
  EXPECT_EQ(coordinator->ProcessNext()->outcome, SwapOutcome::kAlreadyLocal);
}

TEST_F(Swaps, AFullRackEvictsItsColdestPage) {
  Build(2);
  const PageId warm = Put(0, 0), cold = Put(0, 1), p = Put(1, 2);
  Touch(kA, warm, AccessKind::kRead);
  Touch(kA, warm, AccessKind::kRead);
  Touch(kA, cold, AccessKind::kRead);
  for (int i = 0; i < 5; ++i) Touch(kA, p, AccessKind::kWrite, 1);
  ASSERT_TRUE(coordinator->Submit({p, kA}));
  auto r = coordinator->ProcessNext();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, SwapOutcome::kSwapped);
  EXPECT_EQ(r->victim, cold);
  EXPECT_EQ(racks->published().Find(p)->frame, (Frame{0, 1}));
  EXPECT_EQ(racks->published().Find(cold)->frame, (Frame{1, 2}));
  EXPECT_EQ(racks->published().Find(cold)->rack, kB);
  EXPECT_EQ(racks->published().Find(warm)->frame, (Frame{0, 0}));
  EXPECT_EQ(racks->PageBytes(p), Expected(p, 0));
  EXPECT_EQ(racks->PageBytes(cold), Fill(cold));
  EXPECT_EQ(racks->PageBytes(warm), Fill(warm));
  const std::vector<std::string> want = {
      fmt::format("invalidate rack 1 page {}", p), fmt::format("invalidate rack 0 page {}", cold),
      "transfer 1:2 -> 0:buffer", "transfer 0:1 -> 1:2", "transfer 0:buffer -> 0:1",
      fmt::format("commit v{}", racks->directory.version())};
  EXPECT_EQ(racks->steps, want);
  EXPECT_FALSE(racks->frozen(p) || racks->frozen(cold));
}

// Seed 004 step 2: "R1 selects the free page": a page holding no data is
// the victim even where another page is colder.
TEST_F(Swaps, AFullRackGivesAPageWithoutDataBeforeItsColdest) {
  Build(2);
  const PageId cold = Put(0, 0), empty = Put(0, 1), p = Put(1, 2);
  Touch(kA, empty, AccessKind::kRead);  // warmer than `cold`, which no one touched
  for (int i = 0; i < 5; ++i) Touch(kA, p, AccessKind::kRead);
  racks->empty_pages = {empty};
  ASSERT_TRUE(coordinator->Submit({p, kA}));
  auto r = coordinator->ProcessNext();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, SwapOutcome::kSwapped);
  EXPECT_EQ(r->victim, empty);
  EXPECT_EQ(racks->published().Find(p)->frame, (Frame{0, 1}));
  EXPECT_EQ(racks->published().Find(empty)->frame, (Frame{1, 2}));
  EXPECT_EQ(racks->published().Find(cold)->frame, (Frame{0, 0}));
  EXPECT_EQ(racks->PageBytes(p), Fill(p));
  // An empty page of the other rack is no candidate: then the coldest.
  Build(2);
  const PageId cold2 = Put(0, 0), warm2 = Put(0, 1), q = Put(1, 2), empty_b = Put(1, 3);
  Touch(kA, warm2, AccessKind::kRead);
  for (int i = 0; i < 5; ++i) Touch(kA, q, AccessKind::kRead);
  racks->empty_pages = {empty_b};
  ASSERT_TRUE(coordinator->Submit({q, kA}));
  auto r2 = coordinator->ProcessNext();
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(r2->victim, cold2);
}

TEST_F(Swaps, AbortsWhenEvenTheColdestVictimIsHot) {
  Build(1);
  const PageId mine = Put(0, 0), p = Put(1, 0);
  for (int i = 0; i < 5; ++i) Touch(kA, mine, AccessKind::kRead);  // a scan keeps it hot
  for (int i = 0; i < 6; ++i) Touch(kA, p, AccessKind::kRead);
  const std::string before = racks->directory.Encode();
  ASSERT_TRUE(coordinator->Submit({p, kA}));
  auto r = coordinator->ProcessNext();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, SwapOutcome::kVictimHot);
  EXPECT_EQ(r->victim, mine);
  EXPECT_TRUE(racks->steps.empty());
  EXPECT_EQ(racks->directory.Encode(), before);
  // Once the victim cools (decay), the same request goes through.
  clock.Advance(10);  // mine: 5 e^-0.4 = 3.35, not hot; p at A: 6 e^-0.4 = 4.0
  ASSERT_TRUE(coordinator->Submit({p, kA}));
  EXPECT_EQ(coordinator->ProcessNext()->outcome, SwapOutcome::kSwapped);
}

// The owner rack (B) touched the page `owner_touches` times, the requester
// (A) 5 times with accesses of `requester_kind`; A asks for it.
SwapReport Contest(Swaps& t, int owner_touches, AccessKind requester_kind) {
  t.Build(2);
  const PageId p = t.Put(1, 0);
  for (int i = 0; i < owner_touches; ++i) t.Touch(kB, p, AccessKind::kWrite);
  for (int i = 0; i < 5; ++i) t.Touch(kA, p, requester_kind);
  EXPECT_TRUE(t.coordinator->Submit({p, kA}));
  auto r = t.coordinator->ProcessNext();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SwapReport{};
}

TEST_F(Swaps, TheOwnersHigherHotnessRejectsAWriteHotPage) {
  const SwapReport r = Contest(*this, /*owner_touches=*/6, AccessKind::kWrite);  // the owner uses it more
  EXPECT_EQ(r.outcome, SwapOutcome::kRejected);
  EXPECT_DOUBLE_EQ(r.owner_heat.hotness, 6);
  EXPECT_DOUBLE_EQ(r.requester_heat.hotness, 5);
  EXPECT_TRUE(racks->steps.empty());
  EXPECT_EQ(racks->published().Find(r.request.page)->rack, kB);
}

TEST_F(Swaps, AReadHotPageThatMayNotMoveIsCopiedReadOnly) {
  const SwapReport r = Contest(*this, 6, AccessKind::kRead);
  EXPECT_EQ(r.outcome, SwapOutcome::kCopyReadOnly);
  EXPECT_TRUE(r.requester_heat.read_hot);
  EXPECT_TRUE(racks->steps.empty());
  EXPECT_EQ(racks->published().Find(r.request.page)->rack, kB);
}

TEST_F(Swaps, EqualHotnessLetsThePageMove) {
  EXPECT_EQ(Contest(*this, 5, AccessKind::kWrite).outcome, SwapOutcome::kMoved);
}

TEST_F(Swaps, TrivialCases) {
  racks = std::make_unique<FakeRacks>(geometry, std::vector<testing::FakeRackLayout>{{kB, 1, 2}}, 1, HotnessParams{},
                                      &clock);
  coordinator = std::make_unique<SwapCoordinator>(&racks->directory, racks.get());
  const PageId p = Put(1, 0);
  ASSERT_TRUE(coordinator->Submit({p, kB}));
  EXPECT_EQ(coordinator->ProcessNext()->outcome, SwapOutcome::kAlreadyLocal);
  ASSERT_TRUE(coordinator->Submit({p, /*a rack with no memory node*/ 7}));
  EXPECT_EQ(coordinator->ProcessNext()->outcome, SwapOutcome::kNoFrame);
  ASSERT_TRUE(coordinator->Submit({Page(1, 3), kB}));
  EXPECT_EQ(coordinator->ProcessNext().status().code(), Code::kNotFound);
  EXPECT_EQ(coordinator->ProcessNext().status().code(), Code::kNotFound);
  EXPECT_TRUE(racks->steps.empty());
}

TEST_F(Swaps, RequestsAreServedFirstInFirstOut) {
  Build(4);
  const PageId p = Put(1, 0), q = Put(1, 1);
  ASSERT_TRUE(coordinator->Submit({q, kA}));
  ASSERT_TRUE(coordinator->Submit({p, kA}));
  EXPECT_EQ(coordinator->ProcessNext()->request.page, q);
  EXPECT_EQ(coordinator->ProcessNext()->request.page, p);
}

// A victim swap whose step k fails (Invalidate, Invalidate, three
// transfers): the error comes back, the directory is unchanged, both pages'
// data is whole where it says, and accesses resume.
TEST_F(Swaps, AFailedStepIsUndone) {
  for (int k = 0; k < 5; ++k) {
    SCOPED_TRACE(k);
    clock.Set(1000 * (k + 1));
    Build(1);
    const PageId victim = Put(0, 0), p = Put(1, 0);
    for (int i = 0; i < 5; ++i) Touch(kA, p, AccessKind::kWrite);
    const std::string before = racks->directory.Encode();
    // Only step k fails; the undo after it works.
    racks->before_step = [&, k](const std::string&) { racks->fail_from = static_cast<int>(racks->steps.size()) == k ? k : -1; };
    ASSERT_TRUE(coordinator->Submit({p, kA}));
    auto r = coordinator->ProcessNext();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kUnavailable);
    racks->before_step = nullptr;
    racks->fail_from = -1;
    EXPECT_EQ(racks->directory.Encode(), before);
    EXPECT_FALSE(racks->frozen(p) || racks->frozen(victim));
    EXPECT_EQ(racks->PageBytes(p), Expected(p, 0));
    EXPECT_EQ(racks->PageBytes(victim), Fill(victim));
  }
}

TEST_F(Swaps, AFailedUndoIsInternalAndSaysWhereTheDataIs) {
  for (int k : {3, 4}) {  // the transfers after which data must be restored
    SCOPED_TRACE(k);
    Build(1);
    Put(0, 0);
    const PageId p = Put(1, 0);
    for (int i = 0; i < 5; ++i) Touch(kA, p, AccessKind::kWrite);
    racks->fail_from = k;  // the step and everything after it
    ASSERT_TRUE(coordinator->Submit({p, kA}));
    auto r = coordinator->ProcessNext();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInternal);
    EXPECT_NE(r.status().message().find("swap buffer"), std::string::npos) << r.status().message();
    EXPECT_TRUE(racks->frozen(p));
  }
}

}  // namespace
}  // namespace pulse::tier
