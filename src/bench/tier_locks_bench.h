// `pulse bench tier-locks`: the write buffer under a write lock (seed 004
// section 5.4, Fig. 21; LockTierOptions, docs/tier.md) on and off, side by
// side.  Starts a local cluster of two racks (racked_cluster.h) and two CPU
// nodes of rack "a", one with the lock tier's write buffer and one without;
// both write to memory of rack "b" (over the fabric).  A hold is: take an
// exclusive FarLock, `writes_per_hold` writes of one size at random
// 8-aligned offsets of a region, release.  For each run and size the two
// CPU nodes time `holds` holds each, in alternating order; throughput is
// writes per second over the whole holds (acquisition and release
// included: the buffer is written out before the release returns).  After
// each timed stretch the other CPU node reads back the last write.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse::bench {

struct TierLocksBenchOptions {
  std::string binary;   // the pulse executable for the nodes (empty: this one)
  std::string run_dir;  // logs (empty: $PULSE_RUN_DIR, else "run")
  std::string ucx_tls;  // transports of nodes and clients (empty: "tcp")
  // 512 is above the buffer's 256-byte threshold: both sides write straight.
  std::vector<uint32_t> sizes = {16, 64, 128, 255, 512};
  uint32_t writes_per_hold = 100;
  uint32_t holds = 30;  // per run, size and side
  uint32_t runs = 3;
  uint64_t region_bytes = 1 << 20;
  std::function<void(const std::string&)> progress;
};

struct TierLocksFigure {
  uint32_t bytes = 0;
  std::vector<double> buffered_ops_s, unbuffered_ops_s;  // one per run
  double buffered_median = 0, unbuffered_median = 0;
  double speedup = 0;  // of the medians
};

struct TierLocksBenchResult {
  std::vector<TierLocksFigure> figures;
  uint64_t verified = 0;  // read-backs that matched
  uint64_t buffered_writes = 0, flushes = 0, flush_writes = 0;  // the buffered side's counters
  std::string transport;
  double load_average_before = 0, load_average_after = 0;
  nlohmann::json ToJson() const;
};

// Errors: bad options (InvalidArgument), the cluster could not start, an
// operation failed, a read-back differed (Internal).
Result<TierLocksBenchResult> RunTierLocksBench(const TierLocksBenchOptions& options);

}  // namespace pulse::bench
