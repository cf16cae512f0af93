// MemNodeServer: who owns each allocation and how long it lives — the
// one-sided keys handed to the owning tenant only, client sessions and
// their reclamation, durable roots, and the administrative drops
// (memnode_server.h; docs/cluster.md "Memory lifetimes").
#include <fmt/format.h>

#include "memnode/memnode_server.h"
#include "node/node_control.h"
#include "node/node_tenant.h"

namespace pulse::memnode {

using nlohmann::json;

std::optional<Result<json>> MemNodeServer::MemoryOp(net::EndpointId from, const std::string& op, const json& body) {
  if (op == "key") return Key(from, body);
  if (op == "persist") return Persist(from, body);
  if (op == "root_get") return RootGet(from, body);
  if (op == "root_drop") return RootDrop(from, body);
  if (op == "tenant_drop") return TenantDrop(from, body);
  if (op == "end_session") return EndSession(from, body);
  return std::nullopt;
}

Result<uint64_t> MemNodeServer::RequestSession(net::EndpointId from, TenantId tenant, const json& body,
                                               std::string_view op) {
  if (!body.contains("session")) return sessions_.ConnectionSession(from, tenant);
  PULSE_ASSIGN_OR_RETURN(uint64_t id, node::GetU64(body, "session", op));
  Status s = sessions_.Bind(id, tenant, from);
  if (!s.ok()) return Status::FromCode(s.code(), fmt::format("{}: {}", op, s.message()));
  return id;
}

Result<uint32_t> MemNodeServer::FindRoot(TenantId tenant, const std::string& name, bool create, std::string_view op) {
  if (name.empty() || name.size() > AllocationJournal::kMaxRootName)
    return Status::InvalidArgument(
        fmt::format("{}: root must be a name of 1 to {} bytes", op, AllocationJournal::kMaxRootName));
  for (const auto& [slot, r] : roots_)
    if (r.tenant == tenant && r.name == name) return slot;
  if (!create) return Status::NotFound(fmt::format("{}: tenant {} has no root '{}' on node {}", op, tenant, name,
                                                   options_.node));
  for (uint32_t slot = 0; slot < AllocationJournal::kMaxRoots; ++slot) {
    if (roots_.count(slot) != 0) continue;
    RootEntry entry{slot, tenant, 0, name};
    if (journal_) journal_->RecordRoot(entry);
    roots_[slot] = std::move(entry);
    return slot;
  }
  return Status::ResourceExhausted(
      fmt::format("{}: node {} holds {} roots already", op, options_.node, AllocationJournal::kMaxRoots));
}

Status MemNodeServer::Adopt(uint64_t base, uint64_t offset, uint64_t length, TenantId tenant, uint8_t perms,
                            Lifetime lifetime, uint64_t owner, bool journal) {
  Result<net::MemoryRegion> region = worker_->RegisterMemory(pool_->data() + offset, length);
  if (!region.ok())
    return Status::IoError(fmt::format("registering [{:#x}, +{}) for remote access: {}", base, length,
                                       region.status().message()));
  Owned& o = owned_[offset];
  o = Owned{base, length, tenant, perms, lifetime, owner, std::move(region).value()};
  if (lifetime == Lifetime::kSession) sessions_.AddAllocation(owner, offset);
  if (journal && journal_) journal_->Record(JournalEntry{offset, length, tenant, perms, lifetime, owner});
  return Status::Ok();
}

json MemNodeServer::KeyJson(uint64_t offset) const {
  const Owned& o = owned_.at(offset);
  return json{{"base", o.base},
              {"length", o.length},
              {"rkey", node::HexEncode(o.region.rkey())},
              {"remote_base", o.region.remote_address()}};
}

uint64_t MemNodeServer::Reclaim(uint64_t offset) {
  auto o = owned_.find(offset);
  // An allocation of a moved page lives in a withheld frame: the allocator
  // knows the frame, not the allocation.
  const bool in_withheld_frame = FrameWithheld(offset);
  const Allocation* a = in_withheld_frame ? nullptr : allocator_->Find(offset);
  if (o == owned_.end() && a == nullptr) return 0;
  const uint64_t length = o != owned_.end() ? o->second.length : a->length;
  const uint64_t base = o != owned_.end() ? o->second.base : far_base_ + offset;
  if (o != owned_.end()) {
    if (o->second.lifetime == Lifetime::kSession) sessions_.RemoveAllocation(o->second.owner, offset);
    owned_.erase(o);  // unregistered: no key reaches the bytes any more
  }
  (void)service_.RemoveRange(base);
  if (journal_) journal_->Erase(offset);
  // Zero the bytes before anyone else can allocate them.
  pool_->Scrub(offset, length);
  if (a != nullptr) (void)allocator_->Free(offset);
  return length;
}

void MemNodeServer::ReclaimExpiredSessions() {
  const auto now = SessionTable::Clock::now();
  if (now < next_expiry_check_) return;
  uint64_t bytes = 0;
  const std::vector<uint64_t> offsets = sessions_.TakeExpired(now);
  for (uint64_t offset : offsets) bytes += Reclaim(offset);
  if (!offsets.empty())
    log_->Info("reclaimed {} allocations ({} KiB) of client sessions whose lease ran out", offsets.size(),
               bytes >> 10);
  next_expiry_check_ = sessions_.NextExpiry().value_or(SessionTable::Clock::time_point::max());
}

Result<json> MemNodeServer::Key(net::EndpointId from, const json& body) {
  PULSE_ASSIGN_OR_RETURN(uint64_t addr, node::GetU64(body, "addr", "key"));
  PULSE_ASSIGN_OR_RETURN(TenantId tenant, node::RequestTenant(*worker_, from, body, "key"));
  if (body.contains("session")) PULSE_RETURN_IF_ERROR(RequestSession(from, tenant, body, "key").status());
  // A page being moved, or moved away: the client asks again where the
  // directory it will get next says (docs/tier.md).
  PULSE_RETURN_IF_ERROR(PageMovedAway(addr, "key"));
  const Range* range = table_.Find(addr);
  if (range == nullptr)
    return Status::NotFound(fmt::format("key: {:#x} is in no allocation of node {}", addr, options_.node));
  if (range->owner != tenant)
    return Status::PermissionDenied(
        fmt::format("key: {:#x} belongs to tenant {}, not {}", addr, range->owner, tenant));
  return KeyJson(PoolOffsetOf(*range));
}

Result<json> MemNodeServer::Persist(net::EndpointId from, const json& body) {
  PULSE_ASSIGN_OR_RETURN(TenantId tenant, node::RequestTenant(*worker_, from, body, "persist"));
  PULSE_ASSIGN_OR_RETURN(std::string name, node::GetString(body, "root", "persist"));
  PULSE_ASSIGN_OR_RETURN(uint64_t session, node::GetU64(body, "session", "persist"));
  std::optional<uint64_t> addr;
  if (body.contains("addr")) {
    PULSE_ASSIGN_OR_RETURN(addr, node::GetU64(body, "addr", "persist"));
    const Range* range = table_.Find(*addr);
    if (range == nullptr)
      return Status::NotFound(fmt::format("persist: {:#x} is in no allocation of node {}", *addr, options_.node));
    if (range->owner != tenant)
      return Status::PermissionDenied(
          fmt::format("persist: {:#x} belongs to tenant {}, not {}", *addr, range->owner, tenant));
  }
  PULSE_ASSIGN_OR_RETURN(uint32_t slot, FindRoot(tenant, name, /*create=*/true, "persist"));
  if (addr) {
    roots_[slot].addr = *addr;
    if (journal_) journal_->RecordRoot(roots_[slot]);
  }
  // The session's memory here becomes the root's; later allocations name
  // the root themselves.
  uint64_t bytes = 0;
  Result<std::vector<uint64_t>> offsets = sessions_.Take(session, tenant);
  if (!offsets.ok() && offsets.status().code() != Status::Code::kNotFound) return offsets.status();
  for (uint64_t offset : offsets.ok() ? *offsets : std::vector<uint64_t>{}) {
    auto found = owned_.find(offset);
    if (found == owned_.end()) continue;  // revoked by a page move under way (page_moves.cc)
    Owned& o = found->second;
    o.lifetime = Lifetime::kDurable;
    o.owner = slot;
    if (journal_) journal_->Record(JournalEntry{offset, o.length, o.tenant, o.perms, o.lifetime, o.owner});
    bytes += o.length;
  }
  (void)sessions_.Bind(session, tenant, from);  // the client goes on
  return json{{"durable_bytes", bytes}};
}

Result<json> MemNodeServer::RootGet(net::EndpointId from, const json& body) {
  PULSE_ASSIGN_OR_RETURN(TenantId tenant, node::RequestTenant(*worker_, from, body, "root_get"));
  PULSE_ASSIGN_OR_RETURN(std::string name, node::GetString(body, "root", "root_get"));
  PULSE_ASSIGN_OR_RETURN(uint32_t slot, FindRoot(tenant, name, /*create=*/false, "root_get"));
  return json{{"addr", roots_.at(slot).addr}};
}

Result<json> MemNodeServer::RootDrop(net::EndpointId from, const json& body) {
  PULSE_ASSIGN_OR_RETURN(TenantId tenant, node::RequestTenant(*worker_, from, body, "root_drop"));
  PULSE_ASSIGN_OR_RETURN(std::string name, node::GetString(body, "root", "root_drop"));
  PULSE_ASSIGN_OR_RETURN(uint32_t slot, FindRoot(tenant, name, /*create=*/false, "root_drop"));
  std::vector<uint64_t> offsets;
  for (const auto& [offset, o] : owned_)
    if (o.lifetime == Lifetime::kDurable && o.owner == slot) offsets.push_back(offset);
  uint64_t bytes = 0;
  for (uint64_t offset : offsets) bytes += Reclaim(offset);
  if (journal_) journal_->EraseRoot(slot);
  roots_.erase(slot);
  log_->Info("dropped root '{}' of tenant {}: {} allocations ({} KiB)", name, tenant, offsets.size(), bytes >> 10);
  return json{{"freed_bytes", bytes}, {"allocations", offsets.size()}};
}

Result<json> MemNodeServer::TenantDrop(net::EndpointId from, const json& body) {
  PULSE_ASSIGN_OR_RETURN(TenantId tenant, node::RequestTenant(*worker_, from, body, "tenant_drop"));
  (void)sessions_.TakeTenant(tenant);
  std::vector<uint64_t> offsets;
  for (const auto& [offset, o] : owned_)
    if (o.tenant == tenant) offsets.push_back(offset);
  uint64_t bytes = 0;
  for (uint64_t offset : offsets) bytes += Reclaim(offset);
  for (auto it = roots_.begin(); it != roots_.end();) {
    auto next = std::next(it);
    if (it->second.tenant == tenant) {
      if (journal_) journal_->EraseRoot(it->first);
      roots_.erase(it);
    }
    it = next;
  }
  log_->Info("dropped every allocation of tenant {}: {} ({} KiB)", tenant, offsets.size(), bytes >> 10);
  return json{{"freed_bytes", bytes}, {"allocations", offsets.size()}};
}

Result<json> MemNodeServer::EndSession(net::EndpointId from, const json& body) {
  PULSE_ASSIGN_OR_RETURN(TenantId tenant, node::RequestTenant(*worker_, from, body, "end_session"));
  PULSE_ASSIGN_OR_RETURN(uint64_t session, node::GetU64(body, "session", "end_session"));
  Result<std::vector<uint64_t>> offsets = sessions_.Take(session, tenant);
  if (!offsets.ok()) {
    if (offsets.status().code() == Status::Code::kNotFound) return json{{"freed_bytes", 0}};  // nothing here
    return Status::FromCode(offsets.status().code(), "end_session: " + offsets.status().message());
  }
  uint64_t bytes = 0;
  for (uint64_t offset : *offsets) bytes += Reclaim(offset);
  return json{{"freed_bytes", bytes}};
}

json MemNodeServer::TenantUse() const {
  json out = json::object();
  for (const auto& [offset, o] : owned_) {
    json& t = out[std::to_string(o.tenant)];
    if (t.is_null()) t = json{{"session_bytes", 0}, {"durable_bytes", 0}, {"allocations", 0}};
    const char* key = o.lifetime == Lifetime::kDurable ? "durable_bytes" : "session_bytes";
    t[key] = t[key].get<uint64_t>() + o.length;
    t["allocations"] = t["allocations"].get<uint64_t>() + 1;
  }
  return out;
}

}  // namespace pulse::memnode
