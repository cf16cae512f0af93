#include "pulse/ds/lock.h"

#include <algorithm>
#include <random>
#include <thread>

#include <fmt/format.h>

namespace pulse::ds {

namespace {
// A holder id no other FarLock picks (64 random bits).
uint64_t NewHolder() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t h;
  do h = rng(); while (h == 0);
  return h;
}
}  // namespace

FarLock::FarLock(Client* client, uint64_t address, const FarLockOptions& options)
    : client_(client), address_(address), options_(options), holder_(NewHolder()) {}

FarLock::~FarLock() {
  if (held_) IgnoreError(Unlock());  // best effort: a lost hold ends with its lease
}

Result<std::unique_ptr<FarLock>> FarLock::Create(Client* client, const FarLockOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("FarLock: no client");
  PULSE_ASSIGN_OR_RETURN(auto addr, client->Allocate(8));
  return std::unique_ptr<FarLock>(new FarLock(client, addr, options));
}

std::unique_ptr<FarLock> FarLock::Attach(Client* client, uint64_t address, const FarLockOptions& options) {
  return std::unique_ptr<FarLock>(new FarLock(client, address, options));
}

Status FarLock::Lock(bool exclusive, std::chrono::milliseconds timeout) {
  if (held_) return Status::InvalidArgument(fmt::format("FarLock {:#x}: already held", address_));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::microseconds backoff(100);
  for (;;) {
    auto granted = client_->TryLock(address_, holder_, exclusive, options_.lease);
    if (!granted.ok()) return granted.status();
    if (*granted) {
      held_ = true;
      exclusive_ = exclusive;
      client_->EnterLock(exclusive);  // the write buffer / page cache of this hold
      // Other CPU nodes may have changed what this one has cached.
      return client_->InvalidateCache();
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      return Status::Timeout(fmt::format("FarLock {:#x}: no {} hold within {} ms", address_,
                                         exclusive ? "exclusive" : "shared", timeout.count()));
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(backoff, deadline - now));
    backoff = std::min<std::chrono::microseconds>(backoff * 2, std::chrono::milliseconds(5));
  }
}

Status FarLock::LockShared(std::chrono::milliseconds timeout) { return Lock(false, timeout); }
Status FarLock::LockExclusive(std::chrono::milliseconds timeout) { return Lock(true, timeout); }

Status FarLock::Unlock() {
  if (!held_) return Status::InvalidArgument(fmt::format("FarLock {:#x}: not held", address_));
  held_ = false;
  // Every write of this hold reaches far memory before the next holder can
  // take the lock.
  Status drained = client_->LeaveLock(exclusive_);
  Status flushed = client_->FlushCache();
  Status released = client_->Unlock(address_, holder_);
  if (!drained.ok()) return drained;
  return flushed.ok() ? released : flushed;
}

void FarLock::Forget() {
  if (held_) client_->AbandonLock(exclusive_);
  held_ = false;
}

Status FarLock::Renew() {
  if (!held_) return Status::InvalidArgument(fmt::format("FarLock {:#x}: not held", address_));
  return client_->RenewLock(address_, holder_, options_.lease);
}

Result<FarLockGuard> FarLockGuard::Shared(FarLock& lock, std::chrono::milliseconds timeout) {
  PULSE_RETURN_IF_ERROR(lock.LockShared(timeout));
  return FarLockGuard(&lock);
}

Result<FarLockGuard> FarLockGuard::Exclusive(FarLock& lock, std::chrono::milliseconds timeout) {
  PULSE_RETURN_IF_ERROR(lock.LockExclusive(timeout));
  return FarLockGuard(&lock);
}

FarLockGuard::~FarLockGuard() {
  if (lock_ != nullptr) IgnoreError(lock_->Unlock());  // best effort; Release() reports
}

Status FarLockGuard::Release() {
  if (lock_ == nullptr) return Status::InvalidArgument("FarLockGuard: already released");
  FarLock* l = lock_;
  lock_ = nullptr;
  return l->Unlock();
}

}  // namespace pulse::ds
