// PageDirectory's wire encoding (JSON text, the shape in
// pulse/tier/page_directory.h), kept apart from the table's logic.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "pulse/tier/page_directory.h"

namespace pulse::tier {

using nlohmann::json;

std::string PageDirectory::Encode() const {
  json nodes = json::array();
  for (const auto& [id, n] : nodes_) nodes.push_back({{"node", n.node}, {"rack", n.rack}, {"frames", n.frames}});
  json pages = json::array();
  for (const auto& [id, e] : pages_)
    pages.push_back({{"page", e.page}, {"node", e.frame.node}, {"frame", e.frame.index}, {"version", e.version}});
  return json{{"version", version_}, {"nodes", std::move(nodes)}, {"pages", std::move(pages)}}.dump();
}

namespace {

Status Bad(const std::string& what) { return Status::InvalidArgument("page directory: " + what); }

// The unsigned field `key` of object `o` if present and at most `max`.
std::optional<uint64_t> Unsigned(const json& o, const char* key, uint64_t max) {
  auto f = o.find(key);
  if (f == o.end() || !f->is_number_unsigned() || f->get<uint64_t>() > max) return std::nullopt;
  return f->get<uint64_t>();
}

}  // namespace

Result<PageDirectory> PageDirectory::Decode(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("not JSON");
  if (!j.is_object()) return Bad("not an object");
  auto version = Unsigned(j, "version", UINT32_MAX);
  if (!version) return Bad("version must be a u32");
  auto nodes = j.find("nodes");
  if (nodes == j.end() || !nodes->is_array()) return Bad("nodes must be an array");
  auto pages = j.find("pages");
  if (pages == j.end() || !pages->is_array()) return Bad("pages must be an array");

  PageDirectory d;
  for (const json& n : *nodes) {
    if (!n.is_object()) return Bad("a node entry is not an object");
    auto node = Unsigned(n, "node", UINT32_MAX);
    if (!node) return Bad("node must be a u32");
    auto rack = Unsigned(n, "rack", UINT32_MAX);
    if (!rack) return Bad(fmt::format("node {}: rack must be a u32", *node));
    auto frames = Unsigned(n, "frames", UINT64_MAX);
    if (!frames || *frames == 0) return Bad(fmt::format("node {}: frames must be a positive u64", *node));
    if (d.FindNode(static_cast<uint32_t>(*node)) != nullptr) return Bad(fmt::format("node {} is listed twice", *node));
    PULSE_RETURN_IF_ERROR(d.AddMemoryNode(static_cast<uint32_t>(*node), static_cast<RackId>(*rack), *frames));
  }
  for (const json& p : *pages) {
    if (!p.is_object()) return Bad("a page entry is not an object");
    auto page = Unsigned(p, "page", UINT64_MAX);
    if (!page) return Bad("page must be a u64");
    auto node = Unsigned(p, "node", UINT32_MAX);
    if (!node) return Bad(fmt::format("page {}: node must be a u32", *page));
    auto frame = Unsigned(p, "frame", UINT64_MAX);
    if (!frame) return Bad(fmt::format("page {}: frame must be a u64", *page));
    auto page_version = Unsigned(p, "version", UINT32_MAX);
    if (!page_version || *page_version == 0) return Bad(fmt::format("page {}: version must be a positive u32", *page));
    if (d.Find(*page) != nullptr) return Bad(fmt::format("page {} is listed twice", *page));
    const Frame f{static_cast<uint32_t>(*node), *frame};
    if (d.FindNode(f.node) == nullptr) return Bad(fmt::format("page {}: no memory node {}", *page, f.node));
    if (f.index >= d.FindNode(f.node)->frames) return Bad(fmt::format("page {}: frame {} out of range", *page, f.index));
    if (d.PageAt(f)) return Bad(fmt::format("page {}: frame {} of node {} holds page {}", *page, f.index, f.node, *d.PageAt(f)));
    PULSE_RETURN_IF_ERROR(d.Place(*page, f));
    d.pages_[*page].version = static_cast<uint32_t>(*page_version);
  }
  d.version_ = static_cast<uint32_t>(*version);
  return d;
}

}  // namespace pulse::tier
