#include "memnode/lock_table.h"

#include <vector>

#include <fmt/format.h>

namespace pulse::memnode {

std::optional<uint64_t> LockTable::HeldIn(uint64_t begin, uint64_t length, Clock::time_point now) {
  std::vector<uint64_t> in;
  for (const auto& [addr, lock] : locks_)
    if (addr - begin < length) in.push_back(addr);
  for (uint64_t addr : in)
    if (Live(addr, now) != nullptr) return addr;
  return std::nullopt;
}

LockTable::Lock* LockTable::Live(uint64_t addr, Clock::time_point now) {
  auto it = locks_.find(addr);
  if (it == locks_.end()) return nullptr;
  Lock& l = it->second;
  for (auto h = l.holders.begin(); h != l.holders.end();) {
    if (h->second <= now) {
      ++expired_leases_;
      h = l.holders.erase(h);
    } else {
      ++h;
    }
  }
  if (l.holders.empty()) l.exclusive = false;
  if (l.writer_intent_until <= now) l.waiting_writer = 0;
  if (l.holders.empty() && l.waiting_writer == 0) {
    locks_.erase(it);
    return nullptr;
  }
  return &l;
}

bool LockTable::TryAcquire(uint64_t addr, uint64_t holder, bool exclusive, std::chrono::milliseconds lease,
                           Clock::time_point now) {
  Lock* l = Live(addr, now);
  if (l == nullptr) l = &locks_[addr];
  const bool holds = l->holders.count(holder) > 0;
  bool grant;
  if (exclusive) {
    grant = l->holders.empty() || (holds && l->holders.size() == 1);
  } else {
    const bool writer_waits = l->waiting_writer != 0 && l->waiting_writer != holder;
    grant = holds || (!l->exclusive && !writer_waits);
  }
  if (!grant) {
    if (exclusive && (l->waiting_writer == 0 || l->waiting_writer == holder)) {
      l->waiting_writer = holder;
      l->writer_intent_until = now + kWriterIntent;
    }
    return false;
  }
  if (exclusive) {
    l->exclusive = true;
    if (l->waiting_writer == holder) l->waiting_writer = 0;
  }
  l->holders[holder] = now + lease;
  return true;
}

Status LockTable::Renew(uint64_t addr, uint64_t holder, std::chrono::milliseconds lease, Clock::time_point now) {
  if (Lock* l = Live(addr, now); l != nullptr) {
    if (auto h = l->holders.find(holder); h != l->holders.end()) {
      h->second = now + lease;
      return Status::Ok();
    }
  }
  return Status::FailedPrecondition(fmt::format("lock {:#x}: holder {:#x} holds no lease (expired?)", addr, holder));
}

Status LockTable::Release(uint64_t addr, uint64_t holder, Clock::time_point now) {
  Lock* l = Live(addr, now);
  if (l == nullptr || l->holders.erase(holder) == 0)
    return Status::FailedPrecondition(fmt::format("lock {:#x}: holder {:#x} holds no lease (expired?)", addr, holder));
  if (l->holders.empty()) l->exclusive = false;
  Live(addr, now);  // forget the lock if nothing is left of it
  return Status::Ok();
}

}  // namespace pulse::memnode
