// The page directory of tiered memory (issue 16, seed 004 section 4): where
// every page of the global page address space (pulse/tier/page_address.h)
// lives now: which memory node holds it, in which frame of that node's pool
// (frame i is pool bytes [i * page size, (i + 1) * page size)), and so in
// which rack.  The control plane (the metadata server; in pulse the switch)
// owns it and pushes it to the racks; receivers keep a push only if it is
// newer, the same rule as the routing table (src/protocol/routing_table.h:
// a table version that every change, and only a change, increases).  Each
// page also carries its own version, bumped whenever the page moves, so a
// cached translation can be checked against the directory.
//
// The wire encoding is JSON text (as the routing table's):
//   {"version":V,
//    "nodes":[{"node":N,"rack":R,"frames":F},...],
//    "pages":[{"page":P,"node":N,"frame":I,"version":v},...]}
// Decode is strict: every malformed or inconsistent field is an error
// naming it.
//
// A value type; not thread-safe (the owner serialises changes).
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pulse/status.h"
#include "pulse/tier/page_address.h"

namespace pulse::tier {

using RackId = uint32_t;

// One page-sized frame of a memory node's pool.
struct Frame {
  uint32_t node = 0;
  uint64_t index = 0;
  auto operator<=>(const Frame&) const = default;
};

struct PageEntry {
  PageId page = 0;
  Frame frame;
  RackId rack = 0;       // the rack of frame.node
  uint32_t version = 0;  // 1 when placed; +1 on every move
  bool operator==(const PageEntry&) const = default;
};

struct MemoryNodeFrames {
  uint32_t node = 0;
  RackId rack = 0;
  uint64_t frames = 0;  // pool size / page size
  bool operator==(const MemoryNodeFrames&) const = default;
};

class PageDirectory {
 public:
  // 0 for an empty directory that never changed; every change adds one.
  uint32_t version() const { return version_; }

  // Declares memory node `node` of rack `rack` with `frames` page frames.
  // InvalidArgument if frames is 0; AlreadyExists if the node is known.
  Status AddMemoryNode(uint32_t node, RackId rack, uint64_t frames);
  const MemoryNodeFrames* FindNode(uint32_t node) const;
  const std::map<uint32_t, MemoryNodeFrames>& nodes() const { return nodes_; }

  // Puts a new page into a free frame (page version 1).  NotFound for an
  // unknown node, OutOfRange for a frame index past the node's frames,
  // AlreadyExists if the page is placed, FailedPrecondition if the frame
  // holds another page.
  Status Place(PageId page, Frame frame);
  // Forgets a page, freeing its frame.  NotFound if it is not placed.
  Status Remove(PageId page);
  // Moves a page into a free frame, bumping its version.  Errors as Place
  // (NotFound also for an unplaced page); moving to its own frame is
  // FailedPrecondition.
  Status Move(PageId page, Frame to);
  // Swaps the frames of two placed pages, bumping both versions.  NotFound
  // for an unplaced page, InvalidArgument if a == b.
  Status Exchange(PageId a, PageId b);

  // The page's entry; nullptr if not placed.
  const PageEntry* Find(PageId page) const;
  // The same as a Result: NotFound naming the page.
  Result<PageEntry> Lookup(PageId page) const;
  // The page in `frame`, if any.
  std::optional<PageId> PageAt(Frame frame) const;
  // The lowest free frame (by node, then index) of rack `rack`; nullopt if
  // the rack has none.
  std::optional<Frame> FreeFrame(RackId rack) const;
  // The pages held in rack `rack`, by id.
  std::vector<PageId> PagesIn(RackId rack) const;
  const std::map<PageId, PageEntry>& pages() const { return pages_; }

  // Takes `newer` if its version is higher than ours.  Returns whether it
  // did.
  bool Adopt(PageDirectory newer);

  // The JSON text above.
  std::string Encode() const;
  // InvalidArgument naming the bad field (or the inconsistency: unknown
  // node, frame out of range, a page or frame listed twice).
  static Result<PageDirectory> Decode(std::string_view text);

 private:
  Status CheckFreeFrame(Frame frame) const;
  void Relocate(PageEntry& e, Frame to);

  uint32_t version_ = 0;
  std::map<uint32_t, MemoryNodeFrames> nodes_;
  std::map<PageId, PageEntry> pages_;
  std::map<Frame, PageId> occupied_;
};

}  // namespace pulse::tier
