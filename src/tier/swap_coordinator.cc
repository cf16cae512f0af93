#include "pulse/tier/swap_coordinator.h"

#include <fmt/format.h>

namespace pulse::tier {

std::string_view SwapOutcomeName(SwapOutcome outcome) {
  switch (outcome) {
    case SwapOutcome::kMoved: return "moved";
    case SwapOutcome::kSwapped: return "swapped";
    case SwapOutcome::kVictimHot: return "victim hot";
    case SwapOutcome::kNoFrame: return "no frame";
    case SwapOutcome::kRejected: return "rejected";
    case SwapOutcome::kCopyReadOnly: return "copy read-only";
    case SwapOutcome::kAlreadyLocal: return "already local";
  }
  return "?";
}

bool SwapCoordinator::Submit(SwapRequest request) {
  if (!queued_pages_.insert(request.page).second) return false;
  queue_.push_back(request);
  return true;
}

Status SwapCoordinator::Resume(std::span<const PageId> pages, Status failure) {
  // The directory is unchanged; publishing it lets the waiting accesses go
  // on at the frames they had.  The step's error is what the caller learns.
  IgnoreError(fabric_->Commit(*directory_, pages));  // best effort: failure is already being reported
  return failure;
}

Status SwapCoordinator::MoveToFreeFrame(RackId owner, PageId page, Frame from, Frame to, RackId requester) {
  const PageId pages[] = {page};
  if (Status s = fabric_->Invalidate(owner, page); !s.ok()) return Resume(pages, s);
  // The frame is free, so a failed copy destroys nothing.
  if (Status s = fabric_->Transfer(from, to); !s.ok()) return Resume(pages, s);
  if (Status s = directory_->Move(page, to); !s.ok())
    return Resume(pages, Status::Internal(fmt::format("swap of page {} to rack {}: {}", page, requester, s.message())));
  return fabric_->Commit(*directory_, pages);
}

Status SwapCoordinator::SwapWithVictim(RackId owner, PageId page, RackId requester, PageId victim) {
  const Frame hot_frame = directory_->Find(page)->frame;
  const Frame victim_frame = directory_->Find(victim)->frame;
  const Frame buffer{victim_frame.node, kSwapBufferFrame};
  const PageId pages[] = {page, victim};
  auto stuck = [&](const Status& step, const Status& undo) {
    return Status::Internal(fmt::format(
        "swap of page {} (node {} frame {}) with page {} (node {} frame {}): {}; undoing it failed too ({}): both "
        "stay invalidated, page {}'s data is in node {}'s swap buffer",
        page, hot_frame.node, hot_frame.index, victim, victim_frame.node, victim_frame.index, step.message(),
        undo.message(), page, buffer.node));
  };
  if (Status s = fabric_->Invalidate(owner, page); !s.ok()) return Resume(pages, s);
  if (Status s = fabric_->Invalidate(requester, victim); !s.ok()) return Resume(pages, s);
  // Transfer 1 (one-sided, remote rack -> requester): the hot page into the
  // buffer.  Destroys nothing.
  if (Status s = fabric_->Transfer(hot_frame, buffer); !s.ok()) return Resume(pages, s);
  // Transfer 2 (one-sided, requester -> remote rack): the victim over the
  // hot page's frame, whose data is safe in the buffer.
  if (Status s = fabric_->Transfer(victim_frame, hot_frame); !s.ok()) {
    if (Status undo = fabric_->Transfer(buffer, hot_frame); !undo.ok()) return stuck(s, undo);
    return Resume(pages, s);
  }
  // Inside the requester rack: the buffer into the victim's old frame.
  if (Status s = fabric_->Transfer(buffer, victim_frame); !s.ok()) {
    if (Status undo = fabric_->Transfer(hot_frame, victim_frame); !undo.ok()) return stuck(s, undo);
    if (Status undo = fabric_->Transfer(buffer, hot_frame); !undo.ok()) return stuck(s, undo);
    return Resume(pages, s);
  }
  if (Status s = directory_->Exchange(page, victim); !s.ok())
    return Resume(pages, Status::Internal(fmt::format("swap of page {} to rack {}: {}", page, requester, s.message())));
  return fabric_->Commit(*directory_, pages);
}

Result<SwapReport> SwapCoordinator::ProcessNext() {
  if (queue_.empty()) return Status::NotFound("swap coordinator: no request is queued");
  SwapReport report;
  report.request = queue_.front();
  queue_.pop_front();
  queued_pages_.erase(report.request.page);
  const PageId page = report.request.page;
  const RackId requester = report.request.requester;

  PULSE_ASSIGN_OR_RETURN(const PageEntry entry, directory_->Lookup(page));
  const RackId owner = entry.rack;
  if (owner == requester) {
    report.outcome = SwapOutcome::kAlreadyLocal;
    return report;
  }
  report.requester_heat = fabric_->RackHeat(requester, page);

  // (2) A free frame, else a page without data, else the coldest page of
  // the requester rack.
  const std::optional<Frame> free = directory_->FreeFrame(requester);
  if (!free) {
    PageHeat victim_heat;
    report.victim = fabric_->EmptyPage(requester);
    if (report.victim) {
      victim_heat = fabric_->RackHeat(requester, *report.victim);
    } else {
      for (PageId candidate : directory_->PagesIn(requester)) {  // by id: ties go to the lowest
        const PageHeat heat = fabric_->RackHeat(requester, candidate);
        if (!report.victim || heat.hotness < victim_heat.hotness) {
          report.victim = candidate;
          victim_heat = heat;
        }
      }
    }
    if (!report.victim) {
      report.outcome = SwapOutcome::kNoFrame;
      return report;
    }
    if (victim_heat.hot) {
      report.outcome = SwapOutcome::kVictimHot;
      return report;
    }
  }

  // (3) The owner rack keeps a page it uses more (no ping-pong).
  report.owner_heat = fabric_->RackHeat(owner, page);
  if (report.owner_heat.hotness > report.requester_heat.hotness) {
    report.outcome = report.requester_heat.read_hot ? SwapOutcome::kCopyReadOnly : SwapOutcome::kRejected;
    return report;
  }

  // (4)-(6)
  if (free) {
    PULSE_RETURN_IF_ERROR(MoveToFreeFrame(owner, page, entry.frame, *free, requester));
    report.outcome = SwapOutcome::kMoved;
  } else {
    PULSE_RETURN_IF_ERROR(SwapWithVictim(owner, page, requester, *report.victim));
    report.outcome = SwapOutcome::kSwapped;
  }
  return report;
}

}  // namespace pulse::tier
