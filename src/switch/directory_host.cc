#include "switch/directory_host.h"

#include <fmt/format.h>

namespace pulse::switchd {

using nlohmann::json;

Result<DirectoryHost> DirectoryHost::Make(uint64_t page_bytes) {
  Result<tier::PageGeometry> g = tier::PageGeometry::Make(page_bytes);
  if (!g.ok()) return Status::InvalidArgument("switch: --page-bytes: " + g.status().message());
  return DirectoryHost(*g);
}

DirectoryHost::DirectoryHost(tier::PageGeometry geometry) { state_.geometry = geometry; }

Result<bool> DirectoryHost::Register(uint32_t node, const std::string& rack, uint64_t pool_bytes) {
  if (rack.empty()) return false;
  const tier::PageGeometry& g = state_.geometry;
  const uint64_t frames = pool_bytes >> g.shift();
  if (frames == 0)
    return Status::InvalidArgument(fmt::format(
        "register_memnode: node {} of rack '{}': its pool of {} bytes holds no page of {} bytes", node, rack,
        pool_bytes, g.page_size()));
  auto known_rack = state_.racks.find(rack);
  const tier::RackId rack_id =
      known_rack != state_.racks.end() ? known_rack->second : static_cast<tier::RackId>(state_.racks.size());
  if (const tier::MemoryNodeFrames* n = state_.directory.FindNode(node)) {
    if (n->rack != rack_id || n->frames != frames)
      return Status::FailedPrecondition(fmt::format(
          "register_memnode: node {} joined the page directory in rack {} with {} frames and now names rack '{}' "
          "with {} frames; restart the switch to change a node's rack or pool",
          node, n->rack, n->frames, rack, frames));
    return false;  // back again: its frames hold what they held
  }
  tier::PageDirectory d = state_.directory;
  PULSE_RETURN_IF_ERROR(d.AddMemoryNode(node, rack_id, frames));
  for (uint64_t i = 0; i < frames; ++i) {
    PULSE_ASSIGN_OR_RETURN(tier::PageId page, g.PageOfNode(node, i));
    PULSE_RETURN_IF_ERROR(d.Place(page, tier::Frame{node, i}));
  }
  state_.directory = std::move(d);
  state_.racks.emplace(rack, rack_id);
  return true;
}

Result<bool> DirectoryHost::ApplyMoves(const tier::PageDirectory& moved, std::span<const tier::PageId> pages) {
  tier::PageDirectory d = state_.directory;
  for (tier::PageId page : pages) {
    PULSE_ASSIGN_OR_RETURN(const tier::PageEntry to, moved.Lookup(page));
    PULSE_ASSIGN_OR_RETURN(const tier::PageEntry now, d.Lookup(page));
    if (now.frame == to.frame) continue;
    if (std::optional<tier::PageId> other = d.PageAt(to.frame))
      PULSE_RETURN_IF_ERROR(d.Exchange(page, *other));
    else
      PULSE_RETURN_IF_ERROR(d.Move(page, to.frame));
  }
  if (d.version() == state_.directory.version()) return false;
  state_.directory = std::move(d);
  return true;
}

json DirectoryHost::PushMember() const { return tier::EncodeTierPush(state_); }

std::optional<uint32_t> DirectoryHost::Owner(uint64_t addr) const {
  std::optional<tier::PageLocation> l = tier::LocateIn(state_, addr);
  return l ? std::optional<uint32_t>(l->node) : std::nullopt;
}

json DirectoryHost::StatsJson() const {
  uint64_t moved = 0;
  const tier::PageGeometry& g = state_.geometry;
  for (const auto& [page, e] : state_.directory.pages())
    if (std::optional<tier::PageLocation> l = tier::LocateIn(state_, page << g.shift()); l && !l->home) ++moved;
  json racks = json::object();
  for (const auto& [name, id] : state_.racks) racks[name] = id;
  return json{{"version", state_.directory.version()},
              {"page_bytes", g.page_size()},
              {"racks", std::move(racks)},
              {"pages", state_.directory.pages().size()},
              {"moved", moved}};
}

}  // namespace pulse::switchd
