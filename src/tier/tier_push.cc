#include "tier/tier_push.h"

#include <fmt/format.h>

namespace pulse::tier {

using nlohmann::json;

json EncodeTierPush(const TierPush& push) {
  json racks = json::object();
  for (const auto& [name, id] : push.racks) racks[name] = id;
  return json{{"page_bytes", push.geometry.page_size()},
              {"racks", std::move(racks)},
              {"directory", json::parse(push.directory.Encode())}};
}

Result<std::optional<TierPush>> DecodeTierPush(const json& routing_table) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument("tier push: " + what); };
  if (!routing_table.is_object()) return bad("the routing table is not an object");
  auto t = routing_table.find(kTierPushMember);
  if (t == routing_table.end()) return std::optional<TierPush>();
  if (!t->is_object()) return bad("not an object");
  auto page_bytes = t->find("page_bytes");
  if (page_bytes == t->end() || !page_bytes->is_number_unsigned()) return bad("page_bytes must be a u64");
  Result<PageGeometry> geometry = PageGeometry::Make(page_bytes->get<uint64_t>());
  if (!geometry.ok()) return bad(geometry.status().message());
  TierPush push{*geometry, {}, {}};
  auto racks = t->find("racks");
  if (racks == t->end() || !racks->is_object()) return bad("racks must be an object");
  for (const auto& [name, id] : racks->items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() > UINT32_MAX)
      return bad(fmt::format("rack '{}': its id must be a u32", name));
    push.racks[name] = static_cast<RackId>(id.get<uint64_t>());
  }
  auto directory = t->find("directory");
  if (directory == t->end() || !directory->is_object()) return bad("directory must be an object");
  Result<PageDirectory> d = PageDirectory::Decode(directory->dump());
  if (!d.ok()) return bad(d.status().message());
  push.directory = std::move(d).value();
  return std::optional<TierPush>(std::move(push));
}

Result<bool> PageLocator::Adopt(const json& routing_table) {
  PULSE_ASSIGN_OR_RETURN(std::optional<TierPush> push, DecodeTierPush(routing_table));
  if (!push || (push_ && push->directory.version() <= push_->directory.version())) return false;
  push_ = std::move(push);
  return true;
}

std::optional<PageLocation> LocateIn(const TierPush& push, uint64_t addr) {
  const PageGeometry& g = push.geometry;
  Result<PageAddress> a = g.Decode(addr);
  if (!a.ok()) return std::nullopt;
  const PageEntry* e = push.directory.Find(a->page);
  if (e == nullptr) return std::nullopt;
  // The page's home and index in the home's span (a valid page id, so
  // HomeNode succeeds).
  const uint32_t home = *g.HomeNode(a->page);
  const uint64_t home_index = a->page - (uint64_t{home} + 1) * g.pages_per_node();
  return PageLocation{a->page, e->frame.node, e->frame.index * g.page_size() + a->offset, e->version,
                      e->frame.node == home && e->frame.index == home_index};
}

}  // namespace pulse::tier
