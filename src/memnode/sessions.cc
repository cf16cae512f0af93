#include "memnode/sessions.h"

#include <fmt/format.h>

namespace pulse::memnode {

uint64_t SessionTable::ConnectionSession(net::EndpointId ep, TenantId tenant) {
  auto it = connection_session_.find(ep);
  if (it != connection_session_.end() && sessions_.count(it->second) != 0 &&
      sessions_[it->second].tenant == tenant)
    return it->second;
  uint64_t id = 0;
  while (id == 0 || sessions_.count(id) != 0) id = random_() >> 2;
  connection_session_[ep] = id;
  (void)Bind(id, tenant, ep);
  return id;
}

Status SessionTable::Bind(uint64_t id, TenantId tenant, net::EndpointId ep) {
  if (id == 0) return Status::InvalidArgument("session: id 0 is not a session");
  auto [it, created] = sessions_.try_emplace(id);
  if (created) {
    it->second.tenant = tenant;
  } else if (it->second.tenant != tenant) {
    return Status::PermissionDenied(fmt::format("session {:#x} belongs to another tenant", id));
  }
  it->second.connections.insert(ep);
  it->second.expires.reset();
  by_connection_[ep].insert(id);
  return Status::Ok();
}

void SessionTable::Restore(uint64_t id, TenantId tenant, Clock::time_point now) {
  auto [it, created] = sessions_.try_emplace(id);
  if (created) it->second.tenant = tenant;
  if (it->second.connections.empty()) it->second.expires = now + restored_grace_;
}

void SessionTable::AddAllocation(uint64_t id, uint64_t offset) {
  auto it = sessions_.find(id);
  if (it != sessions_.end()) it->second.allocations.insert(offset);
}

void SessionTable::RemoveAllocation(uint64_t id, uint64_t offset) {
  auto it = sessions_.find(id);
  if (it != sessions_.end()) it->second.allocations.erase(offset);
}

void SessionTable::Detach(net::EndpointId ep, Clock::time_point now) {
  connection_session_.erase(ep);
  auto c = by_connection_.find(ep);
  if (c == by_connection_.end()) return;
  for (uint64_t id : c->second) {
    auto it = sessions_.find(id);
    if (it == sessions_.end()) continue;
    it->second.connections.erase(ep);
    if (it->second.connections.empty()) it->second.expires = it->second.allocations.empty() ? now : now + grace_;
  }
  by_connection_.erase(c);
}

std::vector<uint64_t> SessionTable::Remove(std::map<uint64_t, Session>::iterator it) {
  for (net::EndpointId ep : it->second.connections) {
    auto c = by_connection_.find(ep);
    if (c == by_connection_.end()) continue;
    c->second.erase(it->first);
    if (c->second.empty()) by_connection_.erase(c);
  }
  std::vector<uint64_t> out(it->second.allocations.begin(), it->second.allocations.end());
  sessions_.erase(it);
  return out;
}

std::vector<uint64_t> SessionTable::TakeExpired(Clock::time_point now) {
  std::vector<uint64_t> out;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    auto next = std::next(it);
    if (it->second.expires && *it->second.expires <= now) {
      if (!it->second.allocations.empty()) ++expired_;
      std::vector<uint64_t> got = Remove(it);
      out.insert(out.end(), got.begin(), got.end());
    }
    it = next;
  }
  return out;
}

Result<std::vector<uint64_t>> SessionTable::Take(uint64_t id, TenantId tenant) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return Status::NotFound(fmt::format("session {:#x} does not exist here", id));
  if (it->second.tenant != tenant)
    return Status::PermissionDenied(fmt::format("session {:#x} belongs to another tenant", id));
  return Remove(it);
}

std::vector<uint64_t> SessionTable::TakeTenant(TenantId tenant) {
  std::vector<uint64_t> out;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    auto next = std::next(it);
    if (it->second.tenant == tenant) {
      std::vector<uint64_t> got = Remove(it);
      out.insert(out.end(), got.begin(), got.end());
    }
    it = next;
  }
  return out;
}

std::optional<SessionTable::Clock::time_point> SessionTable::NextExpiry() const {
  std::optional<Clock::time_point> next;
  for (const auto& [id, s] : sessions_)
    if (s.expires && (!next || *s.expires < *next)) next = s.expires;
  return next;
}

}  // namespace pulse::memnode
