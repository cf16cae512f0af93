// A fake of the racks behind the swap protocol (SwapFabric of
// pulse/tier/swap_coordinator.h), in one process: each memory node's pool is
// a byte array per frame plus a swap buffer, and reads and writes go where
// the racks' copy of the
// directory (the one last Commit published) says.  An access to a page
// between its Invalidate and the Commit naming it is refused with
// Unavailable (the real CPU node waits; tests queue and replay it).
// Hotness is kept as seed 004 section 5.3 places it: a CPU node's tracker
// counts its accesses to pages of its own rack, the rack daemon's tracker
// all the rack's accesses to pages of other racks.
//
// Tests hook `before_step` to run accesses between the protocol's steps,
// and `fail_from` to make steps fail.  Not thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pulse/tier/swap_coordinator.h"

namespace pulse::tier::testing {

struct FakeRackLayout {
  RackId rack;
  uint32_t node;  // one memory node per rack
  uint64_t frames;
};

class FakeRacks final : public SwapFabric {
 public:
  FakeRacks(PageGeometry geometry, std::vector<FakeRackLayout> racks, int cpu_nodes_per_rack,
            HotnessParams params, const Clock* clock)
      : geometry_(geometry), params_(params) {
    for (const FakeRackLayout& r : racks) {
      EXPECT_TRUE(directory.AddMemoryNode(r.node, r.rack, r.frames).ok());
      trackers_[r.rack];
      // CPU nodes 0 .. n-1, then the daemon.
      for (int c = 0; c <= cpu_nodes_per_rack; ++c) trackers_[r.rack].emplace_back(params, clock);
    }
    published_ = directory;
  }

  // Places a page in `frame` with `fill` as its bytes, published at once.
  void PlacePage(PageId page, Frame frame, const std::vector<uint8_t>& fill) {
    ASSERT_TRUE(directory.Place(page, frame).ok());
    ASSERT_EQ(fill.size(), geometry_.page_size());
    memory_[frame] = fill;
    published_ = directory;
  }

  // A CPU node's access: `len` bytes at `addr` (inside one page).  Counts
  // the access in the CPU node's tracker and as local or remote, and
  // returns the page's heat as the access computed it.
  Result<PageHeat> Read(RackId rack, int cpu, uint64_t addr, uint8_t* out, size_t len) {
    return Access(rack, cpu, addr, out, len, AccessKind::kRead);
  }
  Result<PageHeat> Write(RackId rack, int cpu, uint64_t addr, const uint8_t* in, size_t len) {
    return Access(rack, cpu, addr, const_cast<uint8_t*>(in), len, AccessKind::kWrite);
  }
  // The whole page as the racks see it now.
  std::vector<uint8_t> PageBytes(PageId page) {
    const PageEntry* e = published_.Find(page);
    EXPECT_NE(e, nullptr);
    return e == nullptr ? std::vector<uint8_t>{} : memory_[e->frame];
  }
  const PageDirectory& published() const { return published_; }
  bool frozen(PageId page) const { return frozen_.count(page) != 0; }

  // SwapFabric.
  PageHeat RackHeat(RackId rack, PageId page) override {
    std::vector<const HotnessTracker*> ts;
    auto rack_trackers = trackers_.find(rack);
    if (rack_trackers == trackers_.end()) return {};  // a rack with no memory node uses nothing
    for (const HotnessTracker& t : rack_trackers->second) ts.push_back(&t);
    return SumHeat(ts, page, params_);
  }
  // The lowest page of `empty_pages` that `rack` holds.
  std::optional<PageId> EmptyPage(RackId rack) override {
    for (PageId p : empty_pages)
      if (const PageEntry* e = published_.Find(p); e != nullptr && e->rack == rack) return p;
    return std::nullopt;
  }
  Status Invalidate(RackId rack, PageId page) override {
    PULSE_RETURN_IF_ERROR(Step(fmt::format("invalidate rack {} page {}", rack, page)));
    frozen_.insert(page);
    for (HotnessTracker& t : trackers_.at(rack)) t.Forget(page);
    return Status::Ok();
  }
  Status Transfer(Frame from, Frame to) override {
    PULSE_RETURN_IF_ERROR(Step(fmt::format("transfer {}:{} -> {}:{}", from.node, Index(from), to.node, Index(to))));
    auto src = memory_.find(from);
    if (src == memory_.end()) return Status::Internal(fmt::format("fake: transfer from an unwritten frame {}:{}", from.node, Index(from)));
    memory_[to] = src->second;
    ++transfers;
    return Status::Ok();
  }
  Status Commit(const PageDirectory& d, std::span<const PageId> pages) override {
    PULSE_RETURN_IF_ERROR(Step(fmt::format("commit v{}", d.version())));
    published_ = d;
    for (PageId p : pages) frozen_.erase(p);
    ++commits;
    return Status::Ok();
  }

  PageDirectory directory;  // the metadata server's (the coordinator's)
  std::set<PageId> empty_pages;  // pages holding no data (EmptyPage)
  std::function<void(const std::string& step)> before_step;
  int fail_from = -1;  // steps numbered from 0 fail from this one on (-1: never)
  std::vector<std::string> steps;
  int transfers = 0, commits = 0;
  uint64_t local_accesses = 0, remote_accesses = 0;

 private:
  static std::string Index(Frame f) { return f.index == kSwapBufferFrame ? "buffer" : std::to_string(f.index); }

  Status Step(std::string what) {
    if (before_step) before_step(what);
    const int n = static_cast<int>(steps.size());
    steps.push_back(what);
    if (fail_from >= 0 && n >= fail_from) return Status::Unavailable("fake: step fails: " + what);
    return Status::Ok();
  }

  Result<PageHeat> Access(RackId rack, int cpu, uint64_t addr, uint8_t* buf, size_t len, AccessKind kind) {
    PULSE_ASSIGN_OR_RETURN(PageAddress a, geometry_.Decode(addr));
    if (a.offset + len > geometry_.page_size()) return Status::InvalidArgument("fake: access crosses a page");
    if (frozen_.count(a.page) != 0) return Status::Unavailable(fmt::format("fake: page {} is being swapped", a.page));
    const PageEntry* e = published_.Find(a.page);
    if (e == nullptr) return Status::NotFound(fmt::format("fake: page {} is not placed", a.page));
    ++(e->rack == rack ? local_accesses : remote_accesses);
    std::vector<uint8_t>& bytes = memory_[e->frame];
    if (kind == AccessKind::kRead)
      std::memcpy(buf, bytes.data() + a.offset, len);
    else
      std::memcpy(bytes.data() + a.offset, buf, len);
    std::vector<HotnessTracker>& ts = trackers_.at(rack);
    return (e->rack == rack ? ts.at(cpu) : ts.back()).Record(a.page, kind);
  }

  PageGeometry geometry_;
  HotnessParams params_;
  PageDirectory published_;  // the racks' copy
  std::map<Frame, std::vector<uint8_t>> memory_;
  std::map<RackId, std::vector<HotnessTracker>> trackers_;  // CPU nodes, then the daemon
  std::set<PageId> frozen_;
};

}  // namespace pulse::tier::testing
