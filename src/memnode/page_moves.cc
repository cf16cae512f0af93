// MemNodeServer's part of moving a page between racks (docs/tier.md, "Moving
// pages"): the switch's swap driver (src/switch/swap_driver.h) freezes the
// frames a swap changes, copies them one-sided through keys this node hands
// out for exactly one frame (or its swap buffer), has the new home adopt
// the allocations of each page it receives, and thaws the frames after the
// directory is published.  Cluster peers only: a tenant cannot freeze,
// adopt, read or write a frame this way.
//
// A frozen frame's allocations are revoked: out of the range table (keys,
// traversals and the one-sided path over messages stop reaching them) and
// unregistered, after the frame's gate in the rack pool closed (the rack's
// CPU nodes stop loading and storing there: rack/rack_pool.h).  Requests
// for a frozen page wait here until the thaw; key and free requests are
// answered Aborted, which tells the client to follow the directory.  At the
// thaw a frame still holding the page it was frozen with gets its
// allocations back; one holding another page keeps the allocations adopted
// for it, and the ones revoked leave this node for good.
//
// A frame must not be straddled by an allocation (a page's bytes must all
// belong to it), and durable allocations do not move (their roots are this
// node's): both are refused and counted.  A frozen frame and a frame that
// holds a page other than its home one are withheld from the allocator, so
// nothing is allocated where the address would name another page.
#include <algorithm>

#include <fmt/format.h>

#include "memnode/memnode_server.h"
#include "node/node_control.h"
#include "node/node_tenant.h"
#include "pulse/tier/swap_coordinator.h"

namespace pulse::memnode {

using nlohmann::json;

std::optional<Result<json>> MemNodeServer::PageMoveOp(net::EndpointId from, const std::string& op,
                                                      const json& body) {
  if (op != "page_freeze" && op != "frame_key" && op != "page_adopt" && op != "page_thaw" && op != "empty_frames")
    return std::nullopt;
  if (Status s = node::RequireClusterPeer(*worker_, from, op); !s.ok()) return Result<json>(s);
  const tier::TierPush* push = pages_.push();
  if (push == nullptr || options_.rack.empty())
    return Result<json>(Status::FailedPrecondition(
        fmt::format("{}: node {} has no rack or no page directory yet", op, options_.node)));
  const uint64_t page_bytes = push->geometry.page_size();
  if (op == "empty_frames") return EmptyFrames(page_bytes);
  Result<uint64_t> frame = node::GetU64(body, "frame", op);
  if (!frame.ok()) return Result<json>(frame.status());
  if (op == "frame_key") return FrameKey(*frame, page_bytes);
  const uint64_t frames = pool_->size() / page_bytes;
  if (*frame >= frames)
    return Result<json>(Status::OutOfRange(
        fmt::format("{}: frame {} is past node {}'s {} frames", op, *frame, options_.node, frames)));
  Result<uint64_t> page = node::GetU64(body, "page", op);
  if (!page.ok()) return Result<json>(page.status());
  if (op == "page_freeze") return FreezeFrame(*frame, *page, page_bytes);
  if (op == "page_adopt") return AdoptFrame(*frame, *page, body, page_bytes);
  auto home = body.find("home");
  if (home == body.end() || !home->is_boolean())
    return Result<json>(Status::InvalidArgument("page_thaw: home (a bool: the frame holds its own page) is required"));
  // The directory that says where the page is now; until this node adopts
  // it, requests for a page of this frame are sent to find it (Aborted).
  if (body.contains("version")) {
    Result<uint64_t> version = node::GetU64(body, "version", op);
    if (!version.ok()) return Result<json>(version.status());
    page_moves_.directory_at_least = std::max<uint64_t>(page_moves_.directory_at_least, *version);
  }
  return ThawFrame(*frame, *page, page_bytes, home->get<bool>());
}

namespace {

// A rack access in progress is one memcpy of at most a page; an access that
// does not leave in this time belongs to a stopped or dead process.
constexpr std::chrono::milliseconds kGateDrain{200};

// What page_freeze answers of a frame's revoked allocations (page_adopt's
// "allocations").
json AllocationsJson(const std::vector<MemNodeServer::MovedAllocation>& list) {
  json out = json::array();
  for (const MemNodeServer::MovedAllocation& a : list)
    out.push_back(json{{"base", a.base}, {"length", a.length}, {"tenant", a.tenant}, {"perms", a.perms},
                       {"owner", a.owner}});
  return out;
}

}  // namespace

json MemNodeServer::EmptyFrames(uint64_t page_bytes) const {
  json frames = json::array();
  const uint64_t count = pool_->size() / page_bytes;
  for (uint64_t frame = 0; frame < count; ++frame) {
    const uint64_t begin = frame * page_bytes;
    if (page_moves_.frozen.count(frame) != 0) continue;
    auto owned = owned_.lower_bound(begin);
    if (owned != owned_.end() && owned->first < begin + page_bytes) continue;
    if (page_moves_.withheld.count(frame) == 0 && !allocator_->Overlapping(begin, page_bytes).empty()) continue;
    frames.push_back(frame);
  }
  return json{{"frames", std::move(frames)}};
}

Result<json> MemNodeServer::FreezeFrame(uint64_t frame, uint64_t page, uint64_t page_bytes) {
  const uint64_t begin = frame * page_bytes;
  if (auto it = page_moves_.frozen.find(frame); it != page_moves_.frozen.end()) {
    if (it->second.page != page)
      return Status::FailedPrecondition(fmt::format(
          "page_freeze: frame {} of node {} is frozen holding page {}, not {}", frame, options_.node,
          it->second.page, page));
    return json{{"frame", frame}, {"allocations", AllocationsJson(it->second.revoked)}};
  }
  // The frame's allocations, whether the allocator knows them one by one (a
  // home frame) or the frame is withheld whole (a moved page's frame).
  const bool withheld = page_moves_.withheld.count(frame) != 0;
  if (!withheld) {
    for (const Allocation& a : allocator_->Overlapping(begin, page_bytes)) {
      if (a.offset >= begin && a.offset + a.length <= begin + page_bytes) continue;
      ++page_moves_.refused_straddling;
      return Status::FailedPrecondition(fmt::format(
          "page_freeze: allocation [{:#x}, +{}) of node {} straddles the page of frame {} ([{:#x}, +{})): a "
          "page's bytes must all belong to it to move",
          far_base_ + a.offset, a.length, options_.node, frame, far_base_ + begin, page_bytes));
    }
  }
  std::vector<uint64_t> offsets;
  for (auto it = owned_.lower_bound(begin); it != owned_.end() && it->first < begin + page_bytes; ++it) {
    if (it->second.lifetime == Lifetime::kDurable) {
      ++page_moves_.refused_durable;
      return Status::FailedPrecondition(fmt::format(
          "page_freeze: frame {} of node {} holds durable allocation [{:#x}, +{}) (of a root of this node): "
          "durable memory does not move",
          frame, options_.node, it->second.base, it->second.length));
    }
    offsets.push_back(it->first);
  }
  if (!offsets.empty()) {
    const uint64_t page_base = owned_.at(offsets.front()).base - (offsets.front() - begin);
    if (std::optional<uint64_t> lock = locks_.HeldIn(page_base, page_bytes, std::chrono::steady_clock::now())) {
      ++page_moves_.refused_locked;
      return Status::FailedPrecondition(fmt::format(
          "page_freeze: frame {} of node {} holds lock {:#x}, which is held: a locked page does not move", frame,
          options_.node, *lock));
    }
  }
  // The rack's loads and stores leave the frame before anything changes.
  if (!pool_->gates().Close(frame, kGateDrain)) {
    ++page_moves_.gate_timeouts;
    return Status::Timeout(fmt::format(
        "page_freeze: an access of the rack to frame {} of node {} did not end in {} ms (a CPU node stopped "
        "or died inside it)",
        frame, options_.node, kGateDrain.count()));
  }
  FrozenFrame frozen{page, {}, {}};
  for (uint64_t offset : offsets) {
    auto o = owned_.find(offset);
    frozen.revoked.push_back(MovedAllocation{o->second.base, offset - begin, o->second.length, o->second.tenant,
                                             o->second.perms, o->second.owner});
    (void)service_.RemoveRange(o->second.base);
    owned_.erase(o);  // unregistered
  }
  if (!withheld) {
    for (const MovedAllocation& a : frozen.revoked) (void)allocator_->Free(begin + a.in_page);
    if (Status s = allocator_->Restore(begin, page_bytes); !s.ok()) {
      RestoreRevoked(frame, frozen, page_bytes);
      pool_->gates().Open(frame, GateHolds(frame));
      return Status::FailedPrecondition(
          fmt::format("page_freeze: frame {} of node {} cannot be withheld from the allocator: {}", frame,
                      options_.node, s.message()));
    }
    page_moves_.withheld.insert(frame);
  }
  json allocations = AllocationsJson(frozen.revoked);
  page_moves_.revoked_total += frozen.revoked.size();
  page_moves_.frozen.emplace(frame, std::move(frozen));
  ++page_moves_.frozen_total;
  return json{{"frame", frame}, {"allocations", std::move(allocations)}};
}

Result<json> MemNodeServer::AdoptFrame(uint64_t frame, uint64_t page, const json& body, uint64_t page_bytes) {
  auto it = page_moves_.frozen.find(frame);
  if (it == page_moves_.frozen.end())
    return Status::FailedPrecondition(
        fmt::format("page_adopt: frame {} of node {} is not frozen (page_freeze first)", frame, options_.node));
  const tier::TierPush* push = pages_.push();
  Result<uint64_t> page_base = push->geometry.Encode(tier::PageAddress{page, 0});
  if (!page_base.ok())
    return Status::InvalidArgument(fmt::format("page_adopt: page {}: {}", page, page_base.status().message()));
  auto list = body.find("allocations");
  if (list == body.end() || !list->is_array())
    return Status::InvalidArgument("page_adopt: allocations (an array) is required");
  std::vector<MovedAllocation> incoming;
  for (const json& a : *list) {
    MovedAllocation m;
    for (const char* key : {"base", "length", "tenant", "perms", "owner"})
      if (!a.is_object() || !a.contains(key) || !a[key].is_number_unsigned())
        return Status::InvalidArgument(fmt::format("page_adopt: allocations[].{}: expected an unsigned integer", key));
    m.base = a["base"].get<uint64_t>();
    m.length = a["length"].get<uint64_t>();
    m.tenant = a["tenant"].get<uint32_t>();
    m.perms = a["perms"].get<uint8_t>();
    m.owner = a["owner"].get<uint64_t>();
    m.in_page = m.base - *page_base;
    if (m.base < *page_base || m.length == 0 || m.in_page >= page_bytes || m.length > page_bytes - m.in_page)
      return Status::InvalidArgument(fmt::format("page_adopt: allocation [{:#x}, +{}) is not inside page {}", m.base,
                                                 m.length, page));
    incoming.push_back(m);
  }
  // What an earlier adoption of this swap put here goes first (an undone
  // transfer adopts the page it puts back).
  DropAdopted(frame, it->second, page_bytes);
  const uint64_t begin = frame * page_bytes;
  for (const MovedAllocation& m : incoming) {
    if (Status s = ServeMoved(begin, m); !s.ok()) {
      DropAdopted(frame, it->second, page_bytes);
      return Status::FromCode(s.code(), fmt::format("page_adopt: allocation [{:#x}, +{}) at frame {} of node {}: {}",
                                                    m.base, m.length, frame, options_.node, s.message()));
    }
    it->second.adopted.push_back(m);
  }
  return json{{"frame", frame}, {"adopted", incoming.size()}};
}

void MemNodeServer::DropAdopted(uint64_t frame, FrozenFrame& f, uint64_t page_bytes) {
  for (const MovedAllocation& m : f.adopted) {
    (void)service_.RemoveRange(m.base);
    owned_.erase(frame * page_bytes + m.in_page);  // unregistered
  }
  f.adopted.clear();
}

void MemNodeServer::RestoreRevoked(uint64_t frame, const FrozenFrame& f, uint64_t page_bytes) {
  for (const MovedAllocation& m : f.revoked)
    if (Status s = ServeMoved(frame * page_bytes, m); !s.ok())
      log_->Error("page_thaw: allocation [{:#x}, +{}) of frame {} cannot be served again: {}", m.base, m.length,
                  frame, s.message());
}

Status MemNodeServer::ServeMoved(uint64_t frame_begin, const MovedAllocation& m) {
  uint8_t* bytes = pool_->data() + frame_begin + m.in_page;
  PULSE_RETURN_IF_ERROR(service_.AddRange(Range{m.base, m.length, bytes, m.perms, static_cast<TenantId>(m.tenant)}));
  Result<net::MemoryRegion> region = worker_->RegisterMemory(bytes, m.length);
  if (!region.ok()) {
    (void)service_.RemoveRange(m.base);
    return region.status();
  }
  owned_[frame_begin + m.in_page] = Owned{m.base, m.length, static_cast<TenantId>(m.tenant), m.perms,
                                          Lifetime::kSession, m.owner, std::move(region).value()};
  return Status::Ok();
}

uint64_t MemNodeServer::GateHolds(uint64_t frame) const {
  const tier::TierPush* push = pages_.push();
  if (push == nullptr) return 0;
  const std::optional<tier::PageId> holds = push->directory.PageAt(tier::Frame{options_.node, frame});
  Result<tier::PageId> own = push->geometry.PageOfNode(options_.node, frame);
  return rack::FrameGates::Holds(holds && own.ok() && *holds == *own, holds.value_or(rack::FrameGates::kNoPage));
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

Result<json> MemNodeServer::ThawFrame(uint64_t frame, uint64_t page, uint64_t page_bytes, bool home) {
  page_moves_.regions.erase(frame);  // the swap's keys to it stop working
  auto it = page_moves_.frozen.find(frame);
  const bool was_frozen = it != page_moves_.frozen.end();
  const uint64_t begin = frame * page_bytes;
  if (was_frozen) {
    FrozenFrame& f = it->second;
    if (page == f.page) {
      // The swap did not change this frame: its allocations come back.
      DropAdopted(frame, f, page_bytes);
      RestoreRevoked(frame, f, page_bytes);
    } else {
      // The page left with its allocations; the one that came is served here
      // from now on, for its sessions (a client binds its session again by
      // any request naming it; until then the restored grace applies).
      const auto now = SessionTable::Clock::now();
      for (const MovedAllocation& m : f.revoked) {
        sessions_.RemoveAllocation(m.owner, begin + m.in_page);
        if (journal_) journal_->Erase(begin + m.in_page);
      }
      for (const MovedAllocation& m : f.adopted) {
        sessions_.Restore(m.owner, static_cast<TenantId>(m.tenant), now);
        sessions_.AddAllocation(m.owner, begin + m.in_page);
        if (journal_)
          journal_->Record(JournalEntry{begin + m.in_page, m.length, static_cast<TenantId>(m.tenant), m.perms,
                                        Lifetime::kSession, m.owner});
      }
      if (auto next = sessions_.NextExpiry(); next && *next < next_expiry_check_) next_expiry_check_ = *next;
      page_moves_.moved_out += f.revoked.size();
      page_moves_.moved_in += f.adopted.size();
    }
    page_moves_.frozen.erase(it);
  }
  // A frame holding another node's page stays withheld: an allocation there
  // would have the address of a page that lives elsewhere.  One holding its
  // own page again gives the allocator its allocations one by one.
  if (home && page_moves_.withheld.erase(frame) != 0) {
    (void)allocator_->Free(begin);
    for (auto o = owned_.lower_bound(begin); o != owned_.end() && o->first < begin + page_bytes; ++o)
      if (Status s = allocator_->Restore(o->first, o->second.length); !s.ok())
        log_->Error("page_thaw: allocation at pool offset {:#x} of frame {}: {}", o->first, frame, s.message());
  }
  // The gate says what the frame holds (page + 1; ~0: nothing, the driver's
  // kNoPage) so that a CPU node with an older directory does not enter it.
  pool_->gates().Open(frame, rack::FrameGates::Holds(home, page));
  // Requests that waited for the page go on: here, or redirected.
  std::vector<HeldTraversal> held;
  held.swap(page_moves_.held);
  for (HeldTraversal& h : held) OnTraversal(h.from, h.payload);
  return json{{"frame", frame}, {"was_frozen", was_frozen}, {"withheld", page_moves_.withheld.count(frame) != 0}};
}

Status MemNodeServer::PageMovedAway(uint64_t addr, std::string_view op) const {
  const std::optional<tier::PageLocation> l = pages_.Locate(addr);
  if (!l) return Status::Ok();
  if (pages_.version() < page_moves_.directory_at_least)
    return Status::Aborted(fmt::format("{}: node {} has not adopted page directory version {} yet (a page moved)", op,
                                       options_.node, page_moves_.directory_at_least));
  if (l->node != options_.node)
    return Status::Aborted(fmt::format("{}: page {} of {:#x} is on memory node {} now", op, l->page, addr, l->node));
  const uint64_t page_bytes = pages_.push()->geometry.page_size();
  if (page_moves_.frozen.count(l->pool_offset / page_bytes) != 0)
    return Status::Aborted(fmt::format("{}: page {} of {:#x} is moving", op, l->page, addr));
  return Status::Ok();
}

bool MemNodeServer::FrameWithheld(uint64_t offset) const {
  const tier::TierPush* push = pages_.push();
  return push != nullptr && page_moves_.withheld.count(offset / push->geometry.page_size()) != 0;
}

bool MemNodeServer::HoldIfFrozen(net::EndpointId from, uint64_t cur_ptr, std::span<const uint8_t> payload) {
  if (page_moves_.frozen.empty()) return false;
  const std::optional<tier::PageLocation> l = pages_.Locate(cur_ptr);
  if (!l || l->node != options_.node ||
      page_moves_.frozen.count(l->pool_offset / pages_.push()->geometry.page_size()) == 0)
    return false;
  // Bounded: past it a request is dropped, and its sender re-sends it after
  // its timeout, by then to where the page is.
  if (page_moves_.held.size() >= kMaxHeldTraversals) {
    ++page_moves_.held_dropped;
    return true;
  }
  page_moves_.held.push_back(HeldTraversal{from, std::vector<uint8_t>(payload.begin(), payload.end())});
  ++page_moves_.held_total;
  return true;
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
    // A restarted node restored this frame's allocations from its journal
    // as its own: they are the moved page's, at its addresses.
    const uint64_t begin = i * page_bytes;
    Result<uint64_t> page_base =
        holds ? push->geometry.Encode(tier::PageAddress{*holds, 0}) : Result<uint64_t>(Status::NotFound(""));
    for (auto o = owned_.lower_bound(begin); o != owned_.end() && o->first < begin + page_bytes; ++o) {
      (void)allocator_->Free(o->first);
      if (!page_base.ok() || o->second.base != far_base_ + o->first) continue;
      const Range* r = table_.Find(o->second.base);
      if (r == nullptr) continue;
      Range moved = *r;
      moved.base = *page_base + (o->first - begin);
      (void)service_.RemoveRange(o->second.base);
      if (Status s = service_.AddRange(moved); !s.ok()) {
        log_->Error("frame {} holds page {}: its allocation at pool offset {:#x} cannot be served: {}", i, *holds,
                    o->first, s.message());
        continue;
      }
      o->second.base = moved.base;
    }
    if (Status s = allocator_->Restore(begin, page_bytes); !s.ok()) {
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
              {"allocations_revoked", page_moves_.revoked_total},
              {"allocations_moved_out", page_moves_.moved_out},
              {"allocations_moved_in", page_moves_.moved_in},
              {"traversals_held", page_moves_.held_total},
              {"traversals_held_dropped", page_moves_.held_dropped},
              {"refused_straddling", page_moves_.refused_straddling},
              {"refused_durable", page_moves_.refused_durable},
              {"refused_locked", page_moves_.refused_locked},
              {"gate_timeouts", page_moves_.gate_timeouts}};
}

}  // namespace pulse::memnode
