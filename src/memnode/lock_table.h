// The memory node's lock service (pulse::ds::FarLock talks to it): reader-
// writer locks named by a far address of this node, held by CPU-node holders
// (64-bit ids chosen by the holder) under a lease.  A lock whose holders all
// let their leases lapse is free again, so a CPU node that dies holding a
// lock blocks the others for at most one lease.  Expired leases are dropped
// lazily, whenever the lock is touched: no timer, nothing runs when idle.
//
// Acquisition never blocks here: a request is granted or refused at once and
// the CPU node retries until its own deadline.  A refused exclusive request
// marks the lock "writer waiting" for a short while, during which new shared
// holders are refused, so a stream of readers cannot starve a writer.
//
// Not thread-safe: the memory node's network thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "pulse/status.h"

namespace pulse::memnode {

class LockTable {
 public:
  using Clock = std::chrono::steady_clock;

  // How long a refused writer blocks new readers (it must retry within it).
  static constexpr std::chrono::milliseconds kWriterIntent{50};

  // Grants `holder` the lock at `addr` shared or exclusive until now + lease
  // and returns true, or returns false if it is held incompatibly.  A holder
  // that already holds it gets its lease renewed (and a shared holder that
  // is the only one may upgrade to exclusive).
  bool TryAcquire(uint64_t addr, uint64_t holder, bool exclusive, std::chrono::milliseconds lease,
                  Clock::time_point now);
  // Extends a held lease.  FailedPrecondition if holder does not hold the
  // lock (its lease may have expired).
  Status Renew(uint64_t addr, uint64_t holder, std::chrono::milliseconds lease, Clock::time_point now);
  // Releases holder's hold.  FailedPrecondition if it holds none.
  Status Release(uint64_t addr, uint64_t holder, Clock::time_point now);

  // Locks with at least one live holder or a waiting writer.
  // The address of a live lock in [begin, begin + length), if any: a page
  // holding one does not move (its holders' lock would be left behind).
  std::optional<uint64_t> HeldIn(uint64_t begin, uint64_t length, Clock::time_point now);
  size_t size() const { return locks_.size(); }
  uint64_t expired_leases() const { return expired_leases_; }

 private:
  struct Lock {
    bool exclusive = false;
    std::unordered_map<uint64_t, Clock::time_point> holders;  // holder -> lease end
    uint64_t waiting_writer = 0;
    Clock::time_point writer_intent_until{};
  };
  // Drops expired holders; erases the lock (and returns nullptr) if nothing
  // is left of it.
  Lock* Live(uint64_t addr, Clock::time_point now);

  std::unordered_map<uint64_t, Lock> locks_;
  uint64_t expired_leases_ = 0;
};

}  // namespace pulse::memnode
