#include "pulse/tier/page_directory.h"

#include <utility>

#include <fmt/format.h>

namespace pulse::tier {

Status PageDirectory::AddMemoryNode(uint32_t node, RackId rack, uint64_t frames) {
  if (frames == 0) return Status::InvalidArgument(fmt::format("page directory: memory node {} has no frames", node));
  if (nodes_.count(node) != 0) return Status::AlreadyExists(fmt::format("page directory: memory node {} is known", node));
  nodes_[node] = MemoryNodeFrames{node, rack, frames};
  ++version_;
  return Status::Ok();
}

const MemoryNodeFrames* PageDirectory::FindNode(uint32_t node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &it->second;
}

Status PageDirectory::CheckFreeFrame(Frame frame) const {
  const MemoryNodeFrames* n = FindNode(frame.node);
  if (n == nullptr) return Status::NotFound(fmt::format("page directory: no memory node {}", frame.node));
  if (frame.index >= n->frames)
    return Status::OutOfRange(
        fmt::format("page directory: frame {} of memory node {}, which has {}", frame.index, frame.node, n->frames));
  auto held = occupied_.find(frame);
  if (held != occupied_.end())
    return Status::FailedPrecondition(
        fmt::format("page directory: frame {} of memory node {} holds page {}", frame.index, frame.node, held->second));
  return Status::Ok();
}

void PageDirectory::Relocate(PageEntry& e, Frame to) {
  e.frame = to;
  e.rack = nodes_.at(to.node).rack;
  ++e.version;
}

Status PageDirectory::Place(PageId page, Frame frame) {
  if (pages_.count(page) != 0) return Status::AlreadyExists(fmt::format("page directory: page {} is placed", page));
  PULSE_RETURN_IF_ERROR(CheckFreeFrame(frame));
  pages_[page] = PageEntry{page, frame, nodes_.at(frame.node).rack, 1};
  occupied_[frame] = page;
  ++version_;
  return Status::Ok();
}

Status PageDirectory::Remove(PageId page) {
  auto it = pages_.find(page);
  if (it == pages_.end()) return Status::NotFound(fmt::format("page directory: page {} is not placed", page));
  occupied_.erase(it->second.frame);
  pages_.erase(it);
  ++version_;
  return Status::Ok();
}

Status PageDirectory::Move(PageId page, Frame to) {
  auto it = pages_.find(page);
  if (it == pages_.end()) return Status::NotFound(fmt::format("page directory: page {} is not placed", page));
  PULSE_RETURN_IF_ERROR(CheckFreeFrame(to));
  occupied_.erase(it->second.frame);
  occupied_[to] = page;
  Relocate(it->second, to);
  ++version_;
  return Status::Ok();
}

Status PageDirectory::Exchange(PageId a, PageId b) {
  if (a == b) return Status::InvalidArgument(fmt::format("page directory: exchanging page {} with itself", a));
  auto ia = pages_.find(a);
  auto ib = pages_.find(b);
  if (ia == pages_.end()) return Status::NotFound(fmt::format("page directory: page {} is not placed", a));
  if (ib == pages_.end()) return Status::NotFound(fmt::format("page directory: page {} is not placed", b));
  const Frame fa = ia->second.frame;
  const Frame fb = ib->second.frame;
  Relocate(ia->second, fb);
  Relocate(ib->second, fa);
  occupied_[fa] = b;
  occupied_[fb] = a;
  ++version_;
  return Status::Ok();
}

const PageEntry* PageDirectory::Find(PageId page) const {
  auto it = pages_.find(page);
  return it == pages_.end() ? nullptr : &it->second;
}

Result<PageEntry> PageDirectory::Lookup(PageId page) const {
  const PageEntry* e = Find(page);
  if (e == nullptr) return Status::NotFound(fmt::format("page directory: page {} is not placed", page));
  return *e;
}

std::optional<PageId> PageDirectory::PageAt(Frame frame) const {
  auto it = occupied_.find(frame);
  if (it == occupied_.end()) return std::nullopt;
  return it->second;
}

std::optional<Frame> PageDirectory::FreeFrame(RackId rack) const {
  for (const auto& [node, n] : nodes_) {
    if (n.rack != rack) continue;
    // The first gap in the node's occupied frames (they are sorted).
    uint64_t next = 0;
    for (auto it = occupied_.lower_bound(Frame{node, 0}); it != occupied_.end() && it->first.node == node; ++it) {
      if (it->first.index != next) break;
      ++next;
    }
    if (next < n.frames) return Frame{node, next};
  }
  return std::nullopt;
}

std::vector<PageId> PageDirectory::PagesIn(RackId rack) const {
  std::vector<PageId> out;
  for (const auto& [page, e] : pages_)
    if (e.rack == rack) out.push_back(page);
  return out;
}

bool PageDirectory::Adopt(PageDirectory newer) {
  if (newer.version_ <= version_) return false;
  *this = std::move(newer);
  return true;
}

}  // namespace pulse::tier
