// MemNodeServer's part of moving a page between racks (docs/tier.md, "Moving
// pages"): the switch's swap driver (src/switch/swap_driver.h) freezes the
// frames a swap changes, copies them one-sided through keys this node hands
// out for exactly one frame (or its swap buffer), and thaws them after the
// directory is published.  Cluster peers only: a tenant cannot freeze,
// read or write a frame this way.
//
// Only pages without allocations move: serving a moved page's allocations
// (their range entries, keys and tenants at the new node) is not built, so
// a frame with an allocation in it is refused, and one whose allocation
// straddles the page boundary is refused as such (a page's bytes must all
// belong to it).  Each refusal is counted by reason.  A frozen frame and a
// frame that holds a page other than its home one are withheld from the
// allocator, so nothing is allocated where the address would name another
// page.
#include <fmt/format.h>

#include "memnode/memnode_server.h"
#include "node/node_control.h"
#include "node/node_tenant.h"
#include "pulse/tier/swap_coordinator.h"

namespace pulse::memnode {

using nlohmann::json;

std::optional<Result<json>> MemNodeServer::PageMoveOp(net::EndpointId from, const std::string& op,
                                                      const json& body) {
  if (op != "page_freeze" && op != "frame_key" && op != "page_thaw") return std::nullopt;
  if (Status s = node::RequireClusterPeer(*worker_, from, op); !s.ok()) return Result<json>(s);
  const tier::TierPush* push = pages_.push();
  if (push == nullptr || options_.rack.empty())
    return Result<json>(Status::FailedPrecondition(
        fmt::format("{}: node {} has no rack or no page directory yet", op, options_.node)));
  const uint64_t page_bytes = push->geometry.page_size();
  Result<uint64_t> frame = node::GetU64(body, "frame", op);
  if (!frame.ok()) return Result<json>(frame.status());
  if (op == "frame_key") return FrameKey(*frame, page_bytes);
  const uint64_t frames = pool_->size() / page_bytes;
  if (*frame >= frames)
    return Result<json>(Status::OutOfRange(
        fmt::format("{}: frame {} is past node {}'s {} frames", op, *frame, options_.node, frames)));
  if (op == "page_freeze") return FreezeFrame(*frame, page_bytes);
  auto home = body.find("home");
  if (home == body.end() || !home->is_boolean())
    return Result<json>(Status::InvalidArgument("page_thaw: home (a bool: the frame holds its own page) is required"));
  return ThawFrame(*frame, page_bytes, home->get<bool>());
}

Result<json> MemNodeServer::FreezeFrame(uint64_t frame, uint64_t page_bytes) {
  const uint64_t begin = frame * page_bytes;
  // A withheld frame's only allocation is the withholding itself.
  const std::vector<Allocation> in_page = page_moves_.withheld.count(frame) != 0
                                              ? std::vector<Allocation>{}
                                              : allocator_->Overlapping(begin, page_bytes);
  for (const Allocation& a : in_page) {
    if (a.offset >= begin && a.offset + a.length <= begin + page_bytes) continue;
    ++page_moves_.refused_straddling;
    return Status::FailedPrecondition(fmt::format(
        "page_freeze: allocation [{:#x}, +{}) of node {} straddles the page of frame {} ([{:#x}, +{})): a "
        "page's bytes must all belong to it to move",
        far_base_ + a.offset, a.length, options_.node, frame, far_base_ + begin, page_bytes));
  }
  if (!in_page.empty()) {
    const Allocation& a = in_page.front();
    ++page_moves_.refused_allocated;
    return Status::FailedPrecondition(fmt::format(
        "page_freeze: frame {} of node {} holds allocation [{:#x}, +{}); moving a page with allocations is not "
        "built (docs/tier.md)",
        frame, options_.node, far_base_ + a.offset, a.length));
  }
  if (page_moves_.withheld.count(frame) == 0) {
    if (Status s = allocator_->Restore(begin, page_bytes); !s.ok())
      return Status::FailedPrecondition(
          fmt::format("page_freeze: frame {} of node {} cannot be withheld from the allocator: {}", frame,
                      options_.node, s.message()));
    page_moves_.withheld.insert(frame);
  }
  page_moves_.frozen.insert(frame);
  ++page_moves_.frozen_total;
  return json{{"frame", frame}};
}

Result<json> MemNodeServer::FrameKey(uint64_t frame, uint64_t page_bytes) {
  net::MemoryRegion* region = nullptr;
  if (frame == tier::kSwapBufferFrame) {
    if (!page_moves_.swap_buffer.has_value() || page_moves_.swap_buffer->size() != page_bytes) {
      PULSE_ASSIGN_OR_RETURN(net::MemoryRegion r, worker_->AllocateMemory(page_bytes));
      page_moves_.swap_buffer = std::move(r);
    }
    region = &*page_moves_.swap_buffer;
  } else {
    if (page_moves_.frozen.count(frame) == 0)
      return Status::FailedPrecondition(
          fmt::format("frame_key: frame {} of node {} is not frozen (page_freeze first)", frame, options_.node));
    auto it = page_moves_.regions.find(frame);
    if (it == page_moves_.regions.end()) {
      PULSE_ASSIGN_OR_RETURN(net::MemoryRegion r, worker_->RegisterMemory(pool_->data() + frame * page_bytes, page_bytes));
      it = page_moves_.regions.emplace(frame, std::move(r)).first;
    }
    region = &it->second;
  }
  return json{{"rkey", node::HexEncode(region->rkey())},
              {"remote_base", region->remote_address()},
              {"length", page_bytes}};
}

Result<json> MemNodeServer::ThawFrame(uint64_t frame, uint64_t page_bytes, bool home) {
  page_moves_.regions.erase(frame);  // the swap's keys to it stop working
  const bool was_frozen = page_moves_.frozen.erase(frame) != 0;
  // A frame holding another node's page stays withheld: an allocation there
  // would have the address of a page that lives elsewhere.
  if (home && page_moves_.withheld.erase(frame) != 0) (void)allocator_->Free(frame * page_bytes);
  return json{{"frame", frame}, {"was_frozen", was_frozen}, {"withheld", page_moves_.withheld.count(frame) != 0}};
}

void MemNodeServer::WithholdForeignFrames() {
  const tier::TierPush* push = pages_.push();
  if (push == nullptr || options_.rack.empty()) return;
  const tier::MemoryNodeFrames* mine = push->directory.FindNode(options_.node);
  if (mine == nullptr) return;
  const uint64_t page_bytes = push->geometry.page_size();
  for (uint64_t i = 0; i < mine->frames; ++i) {
    if (page_moves_.withheld.count(i) != 0) continue;
    const std::optional<tier::PageId> holds = push->directory.PageAt(tier::Frame{options_.node, i});
    Result<tier::PageId> own = push->geometry.PageOfNode(options_.node, i);
    if (holds && own.ok() && *holds == *own) continue;
    if (Status s = allocator_->Restore(i * page_bytes, page_bytes); !s.ok()) {
      log_->Warn("frame {} holds a page other than its own but cannot be withheld from the allocator: {}", i,
                 s.message());
      continue;
    }
    page_moves_.withheld.insert(i);
  }
}

json MemNodeServer::PageMovesJson() const {
  return json{{"frozen", page_moves_.frozen.size()},
              {"withheld", page_moves_.withheld.size()},
              {"freezes", page_moves_.frozen_total},
              {"refused_straddling", page_moves_.refused_straddling},
              {"refused_allocated", page_moves_.refused_allocated}};
}

}  // namespace pulse::memnode
