// The hot-page swap protocol at the metadata server (issue 16, seed 004
// section 5.3, Fig. 11), as a state machine over a small fabric interface
// so the logic is tested with a fake (tests/tier/fake_racks.h) and wired to
// the real racks later.
//
// A rack that finds a remote page hot asks for it (Submit).  Requests wait
// in a FIFO queue; a request for a page that already waits is dropped (1).
// ProcessNext then runs the head request:
//   (2) the requester rack gives a free frame, or else a page holding no
//       data (SwapFabric::EmptyPage), or else its coldest page (lowest
//       summed hotness of its CPU nodes) as the victim; if even the victim
//       is hot (a scan, say) the swap aborts: kVictimHot.
//   (3) the owner rack's summed hotness of the page is compared with the
//       requester's; if the owner's is higher the page stays, to prevent
//       ping-pong: kRejected, or kCopyReadOnly when the page is read-hot at
//       the requester (it may cache a read-only copy, seed 004 section 5.4).
//   (4) the owner rack's CPU nodes drop the page from their page tables and
//       its hotness metadata (and the requester's drop the victim), so no
//       access reaches the frames while they change;
//   (5) the two one-sided transfers: the hot page into the requester
//       memory node's swap buffer, the victim into the hot page's old
//       frame; then the buffer into the victim's old frame (a copy inside
//       the requester rack).  Into a free frame it is one transfer;
//   (6) the directory is updated (versions bumped) and published.
// A step that fails is undone as far as the data allows (the frames
// restored from the buffer), the directory is left as it was and published
// again so accesses resume; ProcessNext then returns the step's error.
//
// Not thread-safe: the metadata server runs one swap at a time (Rcmp does
// the same; the queue is what keeps requests from flooding it).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <span>

#include "pulse/status.h"
#include "pulse/tier/hotness.h"
#include "pulse/tier/page_directory.h"

namespace pulse::tier {

// The frame index that names a memory node's swap buffer: one page beyond
// its frames, used only by step 5.
inline constexpr uint64_t kSwapBufferFrame = ~uint64_t{0};

// What the swap protocol needs from the racks.  Implementations say whether
// they are thread-safe; the coordinator calls them from one thread.
class SwapFabric {
 public:
  virtual ~SwapFabric() = default;
  // The hotness of `page` summed over rack `rack`'s CPU nodes and daemon
  // (SumHeat of pulse/tier/hotness.h).
  virtual PageHeat RackHeat(RackId rack, PageId page) = 0;
  // A page of rack `rack` that holds no data (no allocation in it): the
  // paper's "free page", taken as the victim before the coldest page.
  // nullopt if there is none or the fabric cannot tell (the default).
  virtual std::optional<PageId> EmptyPage(RackId rack) { return std::nullopt; }
  // Step 4: rack `rack`'s CPU nodes drop `page` from their page tables and
  // its hotness metadata; until the next Commit naming the page, accesses
  // to it from every rack wait (the memory node holding it refuses or
  // holds the ones that still arrive).
  virtual Status Invalidate(RackId rack, PageId page) = 0;
  // Step 5: copies one whole page from frame `from` to frame `to` (either
  // may be a node's swap buffer, index kSwapBufferFrame): one one-sided
  // operation between racks, a copy inside one.
  virtual Status Transfer(Frame from, Frame to) = 0;
  // Step 6: publishes `directory`; accesses to `pages` resume where it now
  // puts them.
  virtual Status Commit(const PageDirectory& directory, std::span<const PageId> pages) = 0;
};

struct SwapRequest {
  PageId page = 0;
  RackId requester = 0;
};

enum class SwapOutcome {
  kMoved,         // into a free frame of the requester rack
  kSwapped,       // exchanged with the victim
  kVictimHot,     // aborted: the requester rack's coldest page is hot
  kNoFrame,       // aborted: the requester rack has no frame at all
  kRejected,      // the owner rack's hotness is higher
  kCopyReadOnly,  // rejected, but read-hot at the requester: cache a read-only copy
  kAlreadyLocal,  // the page is in the requester rack already
};
std::string_view SwapOutcomeName(SwapOutcome outcome);

struct SwapReport {
  SwapRequest request;
  SwapOutcome outcome = SwapOutcome::kRejected;
  std::optional<PageId> victim;  // kSwapped, kVictimHot
  PageHeat requester_heat;
  PageHeat owner_heat;  // from step 3 on
};

class SwapCoordinator {
 public:
  // Both must outlive the coordinator; it changes `directory` only by
  // completed swaps.
  SwapCoordinator(PageDirectory* directory, SwapFabric* fabric) : directory_(directory), fabric_(fabric) {}

  // Queues a request.  Returns false (and drops it) if a request for the
  // same page is queued already.
  bool Submit(SwapRequest request);
  size_t queued() const { return queue_.size(); }

  // Runs the head request to its end (see above) and dequeues it.
  // NotFound if the queue is empty or the page is not in the directory;
  // a fabric step's error if a step failed (Internal if undoing it failed
  // too: then the pages stay invalidated and the message says where their
  // data is).
  Result<SwapReport> ProcessNext();

 private:
  // Steps 4-6 for `page` (at `from`) into the free frame `to`.
  Status MoveToFreeFrame(RackId owner, PageId page, Frame from, Frame to, RackId requester);
  // Steps 4-6 exchanging `page` (owner rack) with `victim` (requester rack).
  Status SwapWithVictim(RackId owner, PageId page, RackId requester, PageId victim);
  // After a failed step: publish the unchanged directory so accesses resume.
  Status Resume(std::span<const PageId> pages, Status failure);

  PageDirectory* directory_;
  SwapFabric* fabric_;
  std::deque<SwapRequest> queue_;
  std::set<PageId> queued_pages_;
};

}  // namespace pulse::tier
