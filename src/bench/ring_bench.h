// pulse bench ring: the ring request path's two layouts (src/net/ring_*.h,
// docs/ring.md) under seed 004's mixed load, side by side in one run.
//
// Rcmp (seed 004 5.2) motivates the double-layer ring with local-rack
// accesses (answered at once) stuck behind remote-rack ones (answered much
// later) in one ring.  This bench builds exactly that on one connection: a
// RingHost on a thread of its own answers "fast" entries as it takes them
// and "slow" ones (a fraction, chosen by a fixed seed) after a fixed delay;
// the client keeps a window of entries in flight and, when a post is
// refused (no credit, no room), waits for answers before it posts again.
// Per layout it reports the fast and slow entries' latency (from when the
// client wanted to post to the answer, so time spent waiting for a credit
// counts), throughput, and how many posts were refused.  With the slots
// layout a slow entry's slot stays busy until its answer, so the posts a
// lap later wait for it; with the double layer they do not.
//
// Both ends are in this process over the fabric (UCX's shared-memory puts
// where it offers them: the rings are one-sided as on the cluster's one-host
// connections).  Not thread-safe; run once at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse::bench {

struct RingBenchOptions {
  std::vector<std::string> layouts = {"slots", "double"};
  uint32_t slots = 64;            // ring slots (descriptors)
  uint32_t slot_bytes = 256;      // slot bytes (double layer: answer space per entry)
  uint32_t payload_bytes = 128;   // request payload
  uint32_t in_flight = 16;        // entries the client keeps posted
  double slow_fraction = 0.05;    // share of entries answered late ("remote")
  uint32_t slow_us = 500;         // how late
  uint64_t entries = 50000;       // measured entries per layout
  uint64_t seed = 7;
  std::string transports;         // UCX_TLS for both ends ("" = UCX's choice)
  std::function<void(const std::string&)> progress;
};

struct RingLatency {
  uint64_t count = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};

struct RingLayoutResult {
  std::string layout;
  bool one_sided = false;       // the client's puts are UCX's own (shared memory), not messages
  double seconds = 0;
  double entries_per_s = 0;
  RingLatency fast, slow;
  uint64_t refused_full = 0;    // posts refused: no credit (every retry counts)
  uint64_t refused_space = 0;   // posts refused: no room in a data area (double layer)
  uint64_t entries_waited = 0;  // measured entries whose post was refused at least once
  uint64_t ring_bytes = 0;      // the request ring's bytes (the response side has as many)
};

struct RingBenchResult {
  std::vector<RingLayoutResult> layouts;
  double load_average = 0;
  nlohmann::json ToJson(const RingBenchOptions& o) const;
};

// Errors: InvalidArgument naming a bad option (layout, geometry, fraction),
// or the fabric's error (the ring could not open, a wait timed out).
Result<RingBenchResult> RunRingBench(const RingBenchOptions& options);

}  // namespace pulse::bench
