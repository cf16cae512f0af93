#include "protocol/routing_table.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

namespace pulse {

using nlohmann::json;

Result<RoutingMode> ParseRoutingMode(std::string_view name, std::string_view what) {
  if (name == "direct") return RoutingMode::kDirect;
  if (name == "switch") return RoutingMode::kSwitch;
  return Status::InvalidArgument(fmt::format("{}: routing '{}' (direct or switch)", what, name));
}

std::string_view RoutingModeName(RoutingMode mode) { return mode == RoutingMode::kDirect ? "direct" : "switch"; }

Result<RoutingMode> DefaultRoutingMode() {
  const char* env = std::getenv(kRoutingEnvironmentVariable);
  if (env == nullptr || *env == '\0') return RoutingMode::kDirect;
  return ParseRoutingMode(env, kRoutingEnvironmentVariable);
}

const RouteEntry* RoutingTable::OwnerOf(uint64_t addr) const {
  for (const RouteEntry& e : entries_)
    if (addr - e.base < e.size) return &e;
  return nullptr;
}

const RouteEntry* RoutingTable::Find(NodeId node) const {
  for (const RouteEntry& e : entries_)
    if (e.node == node) return &e;
  return nullptr;
}

Status RoutingTable::Put(const RouteEntry& e) {
  if (e.size == 0 || e.base + e.size < e.base)
    return Status::InvalidArgument(fmt::format("routing table: node {}: bad range [{:#x}, +{})", e.node, e.base, e.size));
  for (const RouteEntry& other : entries_) {
    if (other.node != e.node && e.base < other.base + other.size && other.base < e.base + e.size)
      return Status::InvalidArgument(fmt::format("routing table: node {}'s range [{:#x}, +{}) overlaps node {}'s",
                                                 e.node, e.base, e.size, other.node));
  }
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const RouteEntry& x) { return x.node == e.node; });
  if (it != entries_.end()) {
    if (*it == e) return Status::Ok();
    *it = e;
  } else {
    entries_.insert(std::upper_bound(entries_.begin(), entries_.end(), e,
                                     [](const RouteEntry& a, const RouteEntry& b) { return a.node < b.node; }),
                    e);
  }
  ++version_;
  return Status::Ok();
}

void RoutingTable::SetAlive(NodeId node, bool alive) {
  for (RouteEntry& e : entries_) {
    if (e.node != node || e.alive == alive) continue;
    e.alive = alive;
    ++version_;
  }
}

bool RoutingTable::Adopt(RoutingTable newer) {
  if (newer.version_ <= version_) return false;
  *this = std::move(newer);
  return true;
}

json RoutingTable::ToJson() const {
  json nodes = json::array();
  for (const RouteEntry& e : entries_)
    nodes.push_back({{"node", e.node}, {"address", e.address}, {"base", e.base}, {"size", e.size}, {"alive", e.alive}});
  return json{{"version", version_}, {"nodes", std::move(nodes)}};
}

Result<RoutingTable> RoutingTable::FromJson(const json& j) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument("routing table: " + what); };
  if (!j.is_object()) return bad("not an object");
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_unsigned() || version->get<uint64_t>() > UINT32_MAX)
    return bad("version must be a u32");
  auto nodes = j.find("nodes");
  if (nodes == j.end() || !nodes->is_array()) return bad("nodes must be an array");
  RoutingTable t;
  for (const json& n : *nodes) {
    if (!n.is_object()) return bad("a node entry is not an object");
    RouteEntry e;
    auto u64 = [&](const char* key, uint64_t max, uint64_t* out) {
      auto f = n.find(key);
      if (f == n.end() || !f->is_number_unsigned() || f->get<uint64_t>() > max) return false;
      *out = f->get<uint64_t>();
      return true;
    };
    uint64_t node = 0;
    if (!u64("node", UINT32_MAX, &node)) return bad("node must be a u32");
    e.node = static_cast<NodeId>(node);
    if (!u64("base", UINT64_MAX, &e.base)) return bad(fmt::format("node {}: base must be a u64", e.node));
    if (!u64("size", UINT64_MAX, &e.size)) return bad(fmt::format("node {}: size must be a u64", e.node));
    auto address = n.find("address");
    if (address == n.end() || !address->is_string()) return bad(fmt::format("node {}: address must be a string", e.node));
    e.address = address->get<std::string>();
    auto alive = n.find("alive");
    if (alive == n.end() || !alive->is_boolean()) return bad(fmt::format("node {}: alive must be a bool", e.node));
    e.alive = alive->get<bool>();
    if (t.Find(e.node) != nullptr) return bad(fmt::format("node {} is listed twice", e.node));
    PULSE_RETURN_IF_ERROR(t.Put(e));
  }
  t.version_ = static_cast<uint32_t>(version->get<uint64_t>());
  return t;
}

RouteDecision RouteNext(const std::function<std::optional<NodeId>(uint64_t)>& owner, TraversalMessage* m,
                        bool* unroutable) {
  auto invalid = [&] {
    if (unroutable != nullptr) *unroutable = true;
    m->kind = MessageKind::kResponse;
    m->status = TraversalStatus::kFaultInvalidPointer;
    m->fault_addr = m->cur_ptr;
    m->flags &= ~kFlagRedirect;
    return RouteDecision{RouteDecision::To::kCpuNode, m->cpu_node};
  };
  if (m->kind == MessageKind::kRequest) {
    auto o = owner(m->cur_ptr);
    if (!o) return invalid();
    return {RouteDecision::To::kMemoryNode, *o};
  }
  // A response.  "not local" continues on the owner unless the request asked
  // for pulse-acc behaviour (the CPU node re-issues itself).
  if (m->status == TraversalStatus::kNotLocal) {
    auto o = owner(m->cur_ptr);
    if (!o) return invalid();
    if (!(m->flags & kFlagPulseAcc)) {
      m->kind = MessageKind::kRequest;
      m->status = TraversalStatus::kDone;
      m->flags &= ~kFlagRedirect;
      return {RouteDecision::To::kMemoryNode, *o};
    }
  }
  return {RouteDecision::To::kCpuNode, m->cpu_node};
}

}  // namespace pulse
