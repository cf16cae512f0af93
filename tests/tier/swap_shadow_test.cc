// Swaps interleaved with reads and writes, against a shadow copy: two racks
// whose CPU nodes read and write random bytes of random pages, asking for
// pages that turn hot, while the coordinator swaps; between every two steps
// of a swap (the fake's before_step hook) more accesses run.  An access to
// a page in the middle of a swap is queued and replayed after it, as a
// waiting CPU node would.  Every read must return what the shadow holds,
// and at the end every page must be whole: no data lost or torn.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>

#include "tier/fake_racks.h"

namespace pulse::tier {
namespace {

using testing::FakeRacks;

struct Op {
  bool write;
  RackId rack;
  int cpu;
  PageId page;
  uint64_t offset;
  std::vector<uint8_t> bytes;  // to write; the length to read
};

TEST(SwapShadow, SwapsRacingReadsAndWritesLoseAndTearNothing) {
  const PageGeometry geometry = *PageGeometry::Make(4096);
  ManualClock clock;
  HotnessParams params;
  params.hot_threshold = 3;
  FakeRacks racks(geometry, {{0, 0, 5}, {1, 1, 5}}, /*cpu_nodes_per_rack=*/2, params, &clock);
  SwapCoordinator coordinator(&racks.directory, &racks);
  std::mt19937_64 rng(2026);

  std::map<PageId, std::vector<uint8_t>> shadow;
  std::vector<PageId> pages;
  for (uint32_t node = 0; node < 2; ++node)
    for (uint64_t i = 0; i < (node == 0 ? 5u : 4u); ++i) {  // rack 1 keeps one frame free
      const PageId p = *geometry.PageOfNode(node, i);
      std::vector<uint8_t> fill(4096);
      for (auto& b : fill) b = static_cast<uint8_t>(rng());
      racks.PlacePage(p, {node, i}, fill);
      shadow[p] = fill;
      pages.push_back(p);
    }

  std::deque<Op> waiting;  // accesses to a page being swapped
  uint64_t reads_checked = 0;
  // Runs an access now, or queues it if its page is in a swap; a read is
  // checked against the shadow, a write applied to it.
  auto run = [&](const Op& op) {
    auto at = geometry.Encode({op.page, op.offset});
    ASSERT_TRUE(at.ok());
    std::vector<uint8_t> got(op.bytes.size());
    auto heat = op.write ? racks.Write(op.rack, op.cpu, *at, op.bytes.data(), op.bytes.size())
                         : racks.Read(op.rack, op.cpu, *at, got.data(), got.size());
    if (!heat.ok()) {
      ASSERT_EQ(heat.status().code(), Status::Code::kUnavailable) << heat.status().ToString();
      waiting.push_back(op);
      return;
    }
    std::vector<uint8_t>& s = shadow[op.page];
    if (op.write) {
      std::copy(op.bytes.begin(), op.bytes.end(), s.begin() + op.offset);
    } else {
      ASSERT_TRUE(std::equal(got.begin(), got.end(), s.begin() + op.offset)) << "page " << op.page << " offset "
                                                                             << op.offset;
      ++reads_checked;
    }
    if (heat->hot && racks.published().Find(op.page)->rack != op.rack) coordinator.Submit({op.page, op.rack});
  };
  // Accesses skewed to a rack and a few pages, so pages turn hot and move.
  RackId busy = 0;
  auto random_op = [&] {
    Op op;
    op.write = rng() % 3 == 0;
    op.rack = rng() % 4 == 0 ? 1 - busy : busy;
    op.cpu = static_cast<int>(rng() % 2);
    op.page = pages[rng() % 3 == 0 ? rng() % pages.size() : rng() % 4];
    const uint64_t len = 1 + rng() % 64;
    op.offset = rng() % (4096 - len + 1);
    op.bytes.resize(len);
    if (op.write)
      for (auto& b : op.bytes) b = static_cast<uint8_t>(rng());
    clock.Advance(0.5 * static_cast<double>(rng() % 4));
    return op;
  };
  racks.before_step = [&](const std::string&) {
    for (int i = 0, n = static_cast<int>(rng() % 6); i < n; ++i) run(random_op());
  };

  std::map<SwapOutcome, int> outcomes;
  for (int round = 0; round < 3000; ++round) {
    if (round % 300 == 0) busy = 1 - busy;  // the other rack wants the pages now
    for (int i = 0; i < 4; ++i) run(random_op());
    if (rng() % 20 == 0) coordinator.Submit({pages[rng() % pages.size()], static_cast<RackId>(rng() % 2)});
    while (coordinator.queued() > 0) {
      auto r = coordinator.ProcessNext();
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ++outcomes[r->outcome];
      // The swap is committed: the queued accesses go on, in their order.
      std::deque<Op> replay;
      replay.swap(waiting);
      for (const Op& op : replay) run(op);
      ASSERT_TRUE(waiting.empty());
    }
  }
  for (PageId p : pages) {
    ASSERT_FALSE(racks.frozen(p));
    EXPECT_EQ(racks.PageBytes(p), shadow[p]) << "page " << p;
  }
  // Every frame holds at most one page and the racks see the server's map.
  EXPECT_EQ(racks.published().Encode(), racks.directory.Encode());
  // The run did exercise the branches that move data.
  EXPECT_GT(outcomes[SwapOutcome::kSwapped], 20);
  EXPECT_GT(outcomes[SwapOutcome::kMoved], 5);
  EXPECT_GT(reads_checked, 5000u);
  for (auto& [o, n] : outcomes) std::printf("%s: %d\n", std::string(SwapOutcomeName(o)).c_str(), n);
}

}  // namespace
}  // namespace pulse::tier
