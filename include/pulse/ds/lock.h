// pulse::ds::FarLock: a reader-writer lock shared by CPU nodes (separate
// Clients, possibly separate processes), for serialising the writers of a
// far data structure against its readers: synchronisation stays at the CPU
// nodes (seed 000 2.3, seed 001 2.2), the memory node owning the lock's
// address arbitrates (the lock service of include/pulse/cluster.h, over the
// control path rather than emulated one-sided atomics).
//
// A lock is named by a far address of the tenant's memory (Create()
// allocates 8 bytes for it; Attach() names an existing one, e.g. the one a
// creator published).  Holds are leases: a holder that dies (or stalls past
// its lease without Renew()) loses the lock when the lease ends, so the
// others wait at most one lease.  Every acquisition has a deadline and
// returns Timeout when it passes.  Waiting retries with exponential backoff
// (0.1 ms to 5 ms) and sleeps in between; a waiting writer blocks new
// readers so it is not starved.
//
// Acquiring drops the client's cache (ClientOptions::cache; other CPU nodes
// may have written) and releasing writes its dirty blocks back first, so
// cached CPU nodes see each other's writes made under the lock.  The same
// for the lock tier (ClientOptions::lock_tier, docs/tier.md): under an
// exclusive hold small writes are buffered, and releasing writes them all
// out and waits before the lock is given up; under a shared hold read-hot
// pages are cached, dropped on release.  So the next holder sees every
// write of the previous one.  A holder that dies (or Forget()s) with writes
// still buffered loses them, as it would lose a write it never sent.
//
// Thread-safety: a FarLock belongs to one thread, like its Client; each
// thread (CPU node) uses its own FarLock on the same address.  One FarLock
// holds the lock at most once (shared or exclusive).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::ds {

struct FarLockOptions {
  // How long a hold lasts without Renew().
  std::chrono::milliseconds lease{5000};
};

class FarLock {
 public:
  // Allocates the lock's name (8 bytes of far memory).  `client` must
  // outlive the lock.  Errors: those of Allocate.
  static Result<std::unique_ptr<FarLock>> Create(Client* client, const FarLockOptions& options = {});
  // The lock named by `address` (address() of its creator).  Nothing is
  // checked until the first acquisition.
  static std::unique_ptr<FarLock> Attach(Client* client, uint64_t address, const FarLockOptions& options = {});
  // Releases a hold, if any (best effort).
  ~FarLock();
  FarLock(const FarLock&) = delete;
  FarLock& operator=(const FarLock&) = delete;

  // Waits up to `timeout` for a shared / exclusive hold.  Errors: Timeout
  // (naming the lock and the mode), InvalidArgument if this FarLock
  // already holds it, those of Client::TryLock.
  Status LockShared(std::chrono::milliseconds timeout);
  Status LockExclusive(std::chrono::milliseconds timeout);
  // Writes the write buffer out (waited for) and the cache back, and
  // releases the hold.  InvalidArgument if nothing is held;
  // FailedPrecondition if the lease had expired (the lock may have been
  // taken by someone else meanwhile: what was done under it was not
  // protected); the error of a buffered write that failed (the hold is
  // released all the same, and the buffered writes may not all have
  // reached far memory).
  Status Unlock();
  // Extends the lease by the configured length from now.
  // FailedPrecondition if it had expired already.
  Status Renew();

  // Forgets the hold without releasing it, as a CPU node that dies does:
  // the lock stays taken until the lease ends, and writes still in the
  // client's write buffer are dropped unwritten.
  void Forget();

  uint64_t address() const { return address_; }
  uint64_t holder() const { return holder_; }
  bool held() const { return held_; }

 private:
  FarLock(Client* client, uint64_t address, const FarLockOptions& options);
  Status Lock(bool exclusive, std::chrono::milliseconds timeout);

  Client* client_;
  uint64_t address_;
  FarLockOptions options_;
  uint64_t holder_;
  bool held_ = false;
  bool exclusive_ = false;  // the mode of the hold, while held_
};

// Holds a FarLock for a scope.  Shared() / Exclusive() wait up to `timeout`
// for the hold (FarLock::LockShared / LockExclusive) and return the guard or
// the error of the acquisition; the destructor unlocks (its error is
// dropped: call Release() to see it).  Not thread-safe, like the FarLock.
class FarLockGuard {
 public:
  static Result<FarLockGuard> Shared(FarLock& lock, std::chrono::milliseconds timeout);
  static Result<FarLockGuard> Exclusive(FarLock& lock, std::chrono::milliseconds timeout);
  FarLockGuard(FarLockGuard&& other) noexcept : lock_(other.lock_) { other.lock_ = nullptr; }
  FarLockGuard& operator=(FarLockGuard&&) = delete;
  ~FarLockGuard();
  // Unlocks now and reports how (see FarLock::Unlock).
  Status Release();

 private:
  explicit FarLockGuard(FarLock* lock) : lock_(lock) {}
  FarLock* lock_;
};

}  // namespace pulse::ds
