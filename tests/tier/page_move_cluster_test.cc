// Pages that move between racks (docs/tier.md, "Moving pages"), against real
// processes: a switch with `--swaps on`, memory node 0 as rack "a" and node
// 1 as rack "b" (16 pages of 1 MiB each), over tcp.  The switch's swap
// driver freezes the frames a swap changes at their memory nodes, copies
// them one-sided, applies the move to the page directory, pushes it and
// thaws the frames.  What the tests check against a plain reference (the
// bytes written into a frame before the swap):
//  - a page without allocations that rack "a" asks for is exchanged with
//    rack "a"'s coldest page: its bytes arrive in rack "a"'s frame, the
//    victim's in its old one, every node adopts the new directory, and the
//    frames that now hold another node's page are withheld from allocation;
//  - a page holding allocations moves with them: later accesses of the
//    rack it moved to are local, the other rack's go to its new node, and
//    reads and writes racing repeated swaps lose nothing (a shadow copy);
//  - a page straddled by an allocation is refused by name and counted;
//  - a second request while the first runs is dropped (one swap);
//  - a memory node that is silent or dead during a swap fails it with its
//    error (no hang: the driver's wait is bounded), the page stays home and
//    its frame is thawed.
#include <gtest/gtest.h>

#include <signal.h>

#include <iostream>
#include <numeric>
#include <set>

#include "pulse/client.h"
#include "support/cpu_node.h"
#include "support/local_rack.h"
#include "tier/racked_cluster.h"

namespace pulse {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::RackFlags;

constexpr uint64_t kPageBytes = 1 << 20;  // 16 frames of a 16 MiB pool
constexpr uint64_t kSlabBytes = 64 << 10;

class PageMoves : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SetUcxTestEnvironment();
    setenv("UCX_TLS", "tcp", 1);
    ASSERT_TRUE(rack_.StartSwitch(
        {"--page-bytes", std::to_string(kPageBytes), "--swaps", "on", "--swap-timeout-ms", "3000"}));
    rack_.StartMemNode(0, /*pool_mib=*/16, RackFlags("a"));
    rack_.StartMemNode(1, /*pool_mib=*/16, RackFlags("b"));
    ASSERT_TRUE(rack_.Join(2));
  }
  void TearDown() override { unsetenv("UCX_TLS"); }

  json Tier() { return rack_.SwitchStats()["counters"]["tier"]; }
  json Swaps() { return rack_.SwitchStats()["counters"]["swaps"]; }
  json Moves(uint32_t node) { return rack_.MemNodeStats(node)["counters"]["page_moves"]; }
  uint64_t Page(uint32_t node, uint64_t frame) { return FarBase(node) / kPageBytes + frame; }

  // Asks the switch for `page` on behalf of rack `rack`; its answer.
  json Request(uint64_t page, const char* rack) {
    return rack_.cpu().Call(rack_.switch_ep(), {{"op", "swap_request"},
                                                {"page", page},
                                                {"rack", rack},
                                                {"hotness", 5.0},
                                                {"reads", 5u},
                                                {"writes", 0u}});
  }
  // Waits until the switch reports `n` finished swaps; its swap stats.
  json WaitFinished(uint64_t n) {
    json s;
    testing::Eventually(rack_, "swaps", [&](json* last) {
      *last = s = Swaps();
      return s.value("finished", uint64_t{0}) >= n;
    });
    return s;
  }
  // Waits until `node` has no frozen frame and `withheld` withheld ones.
  bool WaitSettled(uint32_t node, uint64_t withheld) {
    return testing::Eventually(rack_, "memory node " + std::to_string(node) + " page_moves", [&](json* m) {
      *m = Moves(node);
      return m->value("frozen", uint64_t{1}) == 0 && m->value("withheld", uint64_t{99}) == withheld;
    });
  }

  // Reads or writes a whole frame the way the swap driver does, as a
  // cluster peer: page_freeze, frame_key, one one-sided Get or Put,
  // page_thaw (`page`: the page the frame holds; `home`: its own).
  void FrameIo(uint32_t node, uint64_t frame, uint64_t page, std::vector<uint8_t>* bytes, bool write, bool home) {
    const net::EndpointId ep = rack_.view(node).ep;
    json f = rack_.cpu().Call(ep, {{"op", "page_freeze"}, {"frame", frame}, {"page", page}});
    ASSERT_TRUE(f.value("ok", false)) << f.dump();
    json k = rack_.cpu().Call(ep, {{"op", "frame_key"}, {"frame", frame}});
    ASSERT_TRUE(k.value("ok", false)) << k.dump();
    ASSERT_EQ(k["length"], kPageBytes);
    Result<net::RemoteKey> key = rack_.cpu().worker().ImportRkey(ep, testing::HexDecode(k["rkey"].get<std::string>()));
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    bytes->resize(kPageBytes);
    const uint64_t remote = k["remote_base"].get<uint64_t>();
    Status s = write ? rack_.cpu().worker().Put(*key, remote, bytes->data(), kPageBytes, 10s)
                     : rack_.cpu().worker().Get(*key, remote, bytes->data(), kPageBytes, 10s);
    ASSERT_TRUE(s.ok()) << s.ToString();
    json t = rack_.cpu().Call(ep, {{"op", "page_thaw"}, {"frame", frame}, {"home", home}, {"page", page}});
    ASSERT_TRUE(t.value("ok", false)) << t.dump();
  }

  testing::LocalRack rack_;
};

TEST_F(PageMoves, AnEmptyPageMovesWithItsBytesAndTheColdestPageOfTheRackTakesItsFrame) {
  const uint64_t hot = Page(1, 5), victim = Page(0, 0);
  std::vector<uint8_t> pattern(kPageBytes);
  std::iota(pattern.begin(), pattern.end(), uint8_t{7});
  ASSERT_NO_FATAL_FAILURE(FrameIo(1, 5, hot, &pattern, /*write=*/true, /*home=*/true));
  const uint64_t version = Tier()["version"].get<uint64_t>();

  json r = Request(hot, "a");
  ASSERT_TRUE(r.value("queued", false)) << r.dump();
  json s = WaitFinished(1);
  EXPECT_EQ(s["failed"], 0u) << s.dump();
  EXPECT_EQ(s["outcomes"].value("swapped", uint64_t{0}), 1u) << s.dump();
  EXPECT_EQ(s["queued"], 0u);

  const json tier = Tier();
  EXPECT_EQ(tier["moved"], 2u) << tier.dump();  // the hot page and the victim
  const uint64_t moved_version = tier["version"].get<uint64_t>();
  EXPECT_GT(moved_version, version);
  EXPECT_TRUE(testing::WaitForTierVersion(rack_, 0, moved_version));
  EXPECT_TRUE(testing::WaitForTierVersion(rack_, 1, moved_version));
  // Each node withholds the frame that now holds the other's page.
  EXPECT_TRUE(WaitSettled(0, 1));
  EXPECT_TRUE(WaitSettled(1, 1));

  // The hot page's bytes are in rack "a" (node 0's frame 0, the victim's
  // old frame); the victim's (zeros) in its old frame.
  std::vector<uint8_t> got;
  ASSERT_NO_FATAL_FAILURE(FrameIo(0, 0, hot, &got, /*write=*/false, /*home=*/false));
  EXPECT_TRUE(got == pattern);
  ASSERT_NO_FATAL_FAILURE(FrameIo(1, 5, victim, &got, /*write=*/false, /*home=*/false));
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t b) { return b == 0; }));

  // Nothing is allocated where the address would name the page that left.
  std::unique_ptr<Client> a = testing::ConnectToRack(rack_, "a");
  ASSERT_NE(a, nullptr);
  auto local = a->Allocate(64, 0);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_NE(*local / kPageBytes, victim) << std::hex << *local;

  // Asked for again, the page is in rack "a" already: nothing moves.
  ASSERT_TRUE(Request(hot, "a").value("queued", false));
  s = WaitFinished(2);
  EXPECT_EQ(s["outcomes"].value("already local", uint64_t{0}), 1u) << s.dump();
  EXPECT_EQ(Tier()["version"], moved_version);

  // Killed and restarted, node 0 learns from the directory that its frame 0
  // holds another node's page and withholds it again.
  rack_.memnode(0).Signal(SIGKILL);
  ASSERT_NE(rack_.memnode(0).Wait(10s), -1);
  rack_.ForgetMemNode(0);
  rack_.StartMemNode(0, /*pool_mib=*/16, RackFlags("a"));
  ASSERT_TRUE(rack_.Join(2));
  EXPECT_TRUE(WaitSettled(0, 1));
}

// Seed 004 step 2 takes "the free page" of the requester rack as the
// victim: the memory node lists the frames that hold no allocation
// (empty_frames: not frame 0, where an allocation is, nor a frozen one), and
// the swap exchanges the hot page with the lowest page of those, so the
// rack's data stays where it is.
TEST_F(PageMoves, TheVictimIsAPageWithoutAllocations) {
  std::unique_ptr<Client> a = testing::ConnectToRack(rack_, "a", 4, kSlabBytes);
  ASSERT_NE(a, nullptr);
  auto mine = a->Allocate(64, 0);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  const uint64_t used_frame = (*mine - FarBase(0)) / kPageBytes;
  const uint64_t value = 0x5eed;
  ASSERT_TRUE(a->Write(*mine, &value, sizeof(value)).ok());

  const net::EndpointId ep = rack_.view(0).ep;
  auto empty_frames = [&] {
    json e = rack_.cpu().Call(ep, {{"op", "empty_frames"}});
    EXPECT_TRUE(e.value("ok", false)) << e.dump();
    std::set<uint64_t> frames;
    for (const json& f : e.value("frames", json::array())) frames.insert(f.get<uint64_t>());
    return frames;
  };
  std::set<uint64_t> empty = empty_frames();
  EXPECT_EQ(empty.count(used_frame), 0u);
  EXPECT_EQ(empty.size(), 15u) << "16 frames, one in use";
  const uint64_t other = used_frame == 0 ? 1 : 0;
  json f = rack_.cpu().Call(ep, {{"op", "page_freeze"}, {"frame", other}, {"page", Page(0, other)}});
  ASSERT_TRUE(f.value("ok", false)) << f.dump();
  EXPECT_EQ(empty_frames().count(other), 0u) << "a frozen frame is no victim";
  json t = rack_.cpu().Call(ep, {{"op", "page_thaw"}, {"frame", other}, {"home", true}, {"page", Page(0, other)}});
  ASSERT_TRUE(t.value("ok", false)) << t.dump();
  EXPECT_EQ(empty_frames().count(other), 1u);

  const uint64_t hot = Page(1, 5);
  ASSERT_TRUE(Request(hot, "a").value("queued", false));
  json s = WaitFinished(1);
  EXPECT_EQ(s["outcomes"].value("swapped", uint64_t{0}), 1u) << s.dump();
  const uint64_t victim = Page(0, *empty.begin());
  EXPECT_NE(victim, Page(0, used_frame));
  const json tier = Tier();
  EXPECT_TRUE(testing::WaitForTierVersion(rack_, 0, tier["version"].get<uint64_t>()));
  // The rack's data did not move: its allocation is read by a load.
  const ClientCounters before = a->counters();
  uint64_t got = 0;
  ASSERT_TRUE(a->Read(*mine, &got, sizeof(got)).ok());
  EXPECT_EQ(got, value);
  EXPECT_EQ(a->counters().rack_reads, before.rack_reads + 1);
  EXPECT_EQ(Moves(0).value("allocations_revoked", uint64_t{0}), 0u) << Moves(0).dump();
  EXPECT_EQ(empty_frames().count(*empty.begin()), 1u) << "the hot page (empty too) took the victim's frame";
}

// A page that clients use moves with its allocations: rack "a"'s client
// makes it hot, the swap puts it in rack "a", and from then on that
// client's accesses to it are loads and stores through its rack's pool (no
// message), while rack "b"'s client, whose allocation shares the page,
// reaches it over the fabric at its new node.  Every value survives.
TEST_F(PageMoves, APageHoldingAllocationsMovesWithThemAndLaterAccessesOfItsRackAreLocal) {
  // Slabs of 64 KiB: both clients' objects share one page.
  std::unique_ptr<Client> a = testing::ConnectToRack(rack_, "a", 4, kSlabBytes);
  std::unique_ptr<Client> b = testing::ConnectToRack(rack_, "b", 4, kSlabBytes);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<uint64_t> mine;  // rack "a"'s client's objects in rack "b"
  for (int i = 0; i < 3; ++i) {
    auto far = a->Allocate(64, 1);
    ASSERT_TRUE(far.ok()) << far.status().ToString();
    mine.push_back(*far);
  }
  auto theirs = b->Allocate(64, 1);
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  const uint64_t page = mine[0] / kPageBytes;
  for (uint64_t m : mine) ASSERT_EQ(m / kPageBytes, page) << "the test wants one page";
  ASSERT_EQ(*theirs / kPageBytes, page) << "the test wants one page";
  for (uint64_t i = 0; i < mine.size(); ++i) {
    const uint64_t v = 0xa000 + i;
    ASSERT_TRUE(a->Write(mine[i], &v, 8).ok());
  }
  uint64_t t = 0xb0b;
  ASSERT_TRUE(b->Write(*theirs, &t, 8).ok());
  // Rack "a"'s 3 writes and 2 reads: the 5th access makes the page hot.
  uint64_t v = 0;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(a->Read(mine[0], &v, 8).ok());
  EXPECT_EQ(a->counters().swap_requests, 1u);
  json s = WaitFinished(1);
  EXPECT_EQ(s["failed"], 0u) << s.dump();
  EXPECT_EQ(s["outcomes"].value("swapped", uint64_t{0}), 1u) << s.dump();
  const uint64_t version = Tier()["version"].get<uint64_t>();
  EXPECT_TRUE(WaitSettled(0, 1));
  EXPECT_TRUE(WaitSettled(1, 1));
  // Each client's slab (the node's allocations; the objects are in them).
  EXPECT_EQ(Moves(1)["allocations_moved_out"], 2u) << Moves(1).dump();
  EXPECT_EQ(Moves(0)["allocations_moved_in"], 2u) << Moves(0).dump();

  // Rack "a"'s client follows the page (its directory may be older: a
  // refused key makes it wait for the newer one) and then reads through
  // its rack's pool.
  for (uint64_t i = 0; i < mine.size(); ++i) {
    ASSERT_TRUE(a->Read(mine[i], &v, 8).ok());
    EXPECT_EQ(v, 0xa000 + i);
  }
  EXPECT_TRUE(testing::Eventually(rack_, "client a's directory", [&](json* last) {
    *last = json{{"node", a->NodeOf(mine[0]).value_or(99)}};
    return a->NodeOf(mine[0]) == std::optional<uint32_t>(0);
  }));
  const ClientCounters before = a->counters();
  for (uint64_t i = 0; i < mine.size(); ++i) {
    const uint64_t w = 0xaa00 + i;
    ASSERT_TRUE(a->Write(mine[i], &w, 8).ok());
    ASSERT_TRUE(a->Read(mine[i], &v, 8).ok());
    EXPECT_EQ(v, w);
  }
  const ClientCounters after = a->counters();
  EXPECT_EQ(after.rack_reads - before.rack_reads, mine.size()) << "reads of the moved page are local now";
  EXPECT_EQ(after.rack_writes - before.rack_writes, mine.size());
  EXPECT_EQ(after.remote_reads, before.remote_reads) << "no read crossed the fabric";
  EXPECT_EQ(after.remote_writes, before.remote_writes);
  EXPECT_EQ(after.remote_page_accesses, before.remote_page_accesses);

  // Rack "b"'s client reaches its object at the page's new node.
  t = 0;
  ASSERT_TRUE(b->Read(*theirs, &t, 8).ok());
  EXPECT_EQ(t, 0xb0bu);
  t = 0xb0b2;
  ASSERT_TRUE(b->Write(*theirs, &t, 8).ok());
  t = 0;
  ASSERT_TRUE(b->Read(*theirs, &t, 8).ok());
  EXPECT_EQ(t, 0xb0b2u);
  EXPECT_EQ(b->NodeOf(*theirs), std::optional<uint32_t>(0));
  EXPECT_EQ(Tier()["version"], version);

  // A page straddled by an allocation longer than a page is refused.
  auto big = a->Allocate(kPageBytes + kPageBytes / 2, 1);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  ASSERT_TRUE(Request(*big / kPageBytes, "a").value("queued", false));
  s = WaitFinished(2);
  EXPECT_EQ(s["failed"], 1u) << s.dump();
  EXPECT_NE(s["last_failure"]["message"].get<std::string>().find("straddles"), std::string::npos) << s.dump();
  EXPECT_EQ(Moves(1)["refused_straddling"], 1u);
  EXPECT_TRUE(WaitSettled(1, 1));
}

// Swaps racing reads and writes (issue 16's "no lost or torn data"): two
// clients, one per rack, keep writing and reading back 8-byte counters in
// objects of one page while the page is swapped into rack "a" and back
// into rack "b", again and again; every read equals the shadow copy's
// value, and at the end every object holds its last write.
TEST_F(PageMoves, SwapsRacingReadsAndWritesOfBothRacksLoseNothing) {
  // No swap requests of their own; slabs of 64 KiB share one page.
  std::unique_ptr<Client> a = testing::ConnectToRack(rack_, "a", /*hot_threshold=*/1e9, kSlabBytes);
  std::unique_ptr<Client> b = testing::ConnectToRack(rack_, "b", /*hot_threshold=*/1e9, kSlabBytes);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  struct Object {
    Client* client;
    uint64_t addr;
    uint64_t value;
  };
  std::vector<Object> objects;
  for (int i = 0; i < 8; ++i) {
    Client* c = i % 2 == 0 ? a.get() : b.get();
    auto far = c->Allocate(64, 1);
    ASSERT_TRUE(far.ok()) << far.status().ToString();
    objects.push_back({c, *far, 0});
  }
  const uint64_t page = objects[0].addr / kPageBytes;
  for (const Object& o : objects) ASSERT_EQ(o.addr / kPageBytes, page);
  uint64_t step = 0, requested = 0;
  const int kSwaps = 6;
  for (int round = 0; round < kSwaps; ++round) {
    // Into rack "a", then back into rack "b", and so on.
    ASSERT_TRUE(Request(page, round % 2 == 0 ? "a" : "b").value("queued", false));
    ++requested;
    // Accesses while the swap runs (and after it finished) until the
    // switch says it is done.
    for (;;) {
      const bool done = Swaps().value("finished", uint64_t{0}) >= requested;
      for (Object& o : objects) {
        const uint64_t w = ++step;
        Status ws = o.client->Write(o.addr, &w, 8);
        ASSERT_TRUE(ws.ok()) << ws.ToString();
        o.value = w;
        uint64_t r = 0;
        Status rs = o.client->Read(o.addr, &r, 8);
        ASSERT_TRUE(rs.ok()) << rs.ToString();
        ASSERT_EQ(r, o.value) << "object " << std::hex << o.addr << " in swap round " << round;
      }
      if (done) break;
    }
  }
  json s = Swaps();
  EXPECT_EQ(s["failed"], 0u) << s.dump();
  EXPECT_EQ(s["outcomes"].value("swapped", uint64_t{0}), static_cast<uint64_t>(kSwaps)) << s.dump();
  for (const Object& o : objects) {
    uint64_t r = 0;
    ASSERT_TRUE(o.client->Read(o.addr, &r, 8).ok());
    EXPECT_EQ(r, o.value);
  }
  EXPECT_GT(Moves(1)["allocations_moved_out"].get<uint64_t>(), 0u);
  EXPECT_GT(Moves(0)["allocations_moved_out"].get<uint64_t>(), 0u);
  std::cout << "swaps racing accesses: " << step << " writes, client a waited " << a->counters().page_move_waits
            << " times and was refused by a gate " << a->counters().rack_gate_refusals << " times, client b "
            << b->counters().page_move_waits << " / " << b->counters().rack_gate_refusals << "\n";
}

// A racked node holding the directory places allocations by pages (step 1
// of moving pages that hold allocations, docs/tier.md): none of a page or
// less crosses a page boundary, a longer one starts on one.  The client
// asks its node for slabs of ClientOptions::slab_bytes (1 MiB, this test's
// page) and for a range of its own per larger object: after a 1.5-page
// object, plain first fit would put the next slab across a page boundary.
TEST_F(PageMoves, AllocationsOfAPageOrLessKeepToOnePageAndLongerOnesStartOnOne) {
  std::unique_ptr<Client> a = testing::ConnectToRack(rack_, "a");
  ASSERT_NE(a, nullptr);
  const uint64_t slab = ClientOptions{}.slab_bytes;
  ASSERT_LE(slab, kPageBytes);
  auto big = a->Allocate(kPageBytes + kPageBytes / 2, 1);  // a range of its own
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(*big % kPageBytes, 0u) << std::hex << *big << ": longer than a page, not on a page boundary";
  auto small = a->Allocate(64, 1);  // the first object of a new slab: at its start
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(*small / kPageBytes, (*small + slab - 1) / kPageBytes)
      << std::hex << *small << ": its slab crosses a page boundary";
  auto next = a->Allocate(kPageBytes + kPageBytes / 2, 1);  // after the slab, on a boundary again
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(*next % kPageBytes, 0u) << std::hex << *next;
  EXPECT_GT(*next, *small);
}

TEST_F(PageMoves, ASecondRequestWhileTheFirstRunsIsDroppedAndASilentNodeFailsTheSwap) {
  const uint64_t hot = Page(1, 7);
  // Node 1 stops answering: the swap waits at its first step (page_freeze
  // at node 1) for the driver's timeout, 3 s.
  rack_.memnode(1).Signal(SIGSTOP);
  ASSERT_TRUE(Request(hot, "a").value("queued", false));
  json dup = Request(hot, "a");
  EXPECT_FALSE(dup.value("queued", true)) << dup.dump();
  EXPECT_EQ(Swaps()["duplicates"], 1u);
  json s = WaitFinished(1);
  rack_.memnode(1).Signal(SIGCONT);
  EXPECT_EQ(s["finished"], 1u);
  EXPECT_EQ(s["failed"], 1u) << s.dump();
  EXPECT_EQ(s["last_failure"]["code"], StatusCodeToWire(Status::Code::kTimeout)) << s.dump();
  EXPECT_EQ(Tier()["moved"], 0u);
  // The late freeze is followed by the thaw the driver sent after it.
  EXPECT_TRUE(WaitSettled(1, 0));
}

TEST_F(PageMoves, ARequesterRackWhoseMemoryNodeIsDeadFailsTheSwapAndThePageStaysHome) {
  const uint64_t hot = Page(1, 3);
  rack_.memnode(0).Signal(SIGKILL);
  ASSERT_NE(rack_.memnode(0).Wait(10s), -1);
  ASSERT_TRUE(Request(hot, "a").value("queued", false));
  json s = WaitFinished(1);
  EXPECT_EQ(s["failed"], 1u) << s.dump();
  const uint32_t code = s["last_failure"].value("code", 0u);
  EXPECT_TRUE(code == StatusCodeToWire(Status::Code::kUnavailable) ||
              code == StatusCodeToWire(Status::Code::kTimeout))
      << s.dump();
  EXPECT_EQ(Tier()["moved"], 0u);
  // Node 1 froze the hot page's frame first; it is thawed.
  EXPECT_TRUE(WaitSettled(1, 0));
}

}  // namespace
}  // namespace pulse
