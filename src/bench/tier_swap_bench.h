// The swap study of `pulse bench tier` (issue 16, seed 004 Fig. 20): a CPU
// node of rack "a" reads and writes objects held in rack "b", chosen
// uniformly or Zipfian (theta 0.99 over the objects in address order, so
// the hottest objects share the first pages), with hot-page swaps off and
// on.  Each swap setting runs its own local cluster of two racks (the
// switch with --swaps on and pages of `page_bytes`); the distributions run
// one after another in it, each over objects of its own.  Every read is
// checked against the last value written.  With swaps on, the pages the
// client makes hot move into its rack and its later accesses to them are
// loads and stores: counted (`local_fraction`), not timed in tests.
// Thread-safety: not reentrant (it sets UCX_TLS for this process).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/traverse_bench.h"  // LatencyStats
#include "pulse/status.h"

namespace pulse::bench {

struct TierSwapOptions {
  std::string binary, run_dir, ucx_tls;  // as TierBenchOptions'
  std::vector<std::string> swaps = {"off", "on"};
  std::vector<std::string> distributions = {"uniform", "zipfian"};
  uint32_t ops = 20000;          // measured operations per swap setting and distribution (half reads)
  uint32_t objects = 262144;     // in rack "b" (16 MiB of 64-byte objects: 256 pages)
  uint32_t object_bytes = 64;
  // The page directory's pages: at least the memory nodes' allocation
  // granularity (64 KiB by default), or every allocation straddles pages
  // and no swap can move one.
  uint64_t page_bytes = 64 << 10;
  double hot_threshold = 4;        // H_p
  // Each memory node's pool; 0: twice the objects' bytes and 16 MiB more
  // (at least 64).  Every frame is a page of the directory each swap
  // pushes whole, so a smaller pool makes swaps cheaper.
  uint32_t pool_mib = 0;
  uint64_t seed = 1;
  std::function<void(const std::string&)> progress;
};

struct TierSwapFigure {
  std::string swap, distribution;
  uint32_t ops = 0;
  double throughput_ops = 0;  // operations / their summed time
  LatencyStats read, write;
  double local_fraction = 0;  // operations served by the rack pool / all
  // Over the objects' first writes and the operations: the client's
  // requests, the switch's swaps (those that failed, and the last failure's
  // message, e.g. a page smaller than the memory node's allocation
  // granularity (64 KiB by default): its allocations straddle pages).
  uint64_t swap_requests = 0, swaps_finished = 0, swaps_failed = 0;
  uint64_t page_move_waits = 0;  // the client's accesses that waited for a page to move
  std::string last_failure;
  std::map<std::string, uint64_t> swap_outcomes;
  uint64_t verified_reads = 0;
};

// InvalidArgument naming a bad option, else Ok.
Status CheckTierSwapOptions(const TierSwapOptions& options);

// One figure per swap setting and distribution, in that order.  Errors:
// bad options, the clusters', an operation's, Internal if a read returned
// another value than written.
Result<std::vector<TierSwapFigure>> RunTierSwapStudy(const TierSwapOptions& options);

}  // namespace pulse::bench
