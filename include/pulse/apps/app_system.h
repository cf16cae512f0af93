// pulse::apps::AppSystem: the system an application runs on, as the
// evaluation compares them (seed 000 section 6, seed 001 section 7): pulse,
// pulse-acc, cache (Fastswap-like), rpc, rpc-wimpy and cache-rpc (AIFM-like).
//
// An application builds its far-memory data with client() and performs
// every request through the system's operations: the pointer traversals
// (hash lookup, B+tree scan, time-series aggregate) and the one-sided object
// accesses around them.  A system decides where and how those run:
// offloaded to the memory nodes, at the CPU node through a cache, or as a
// native handler on the memory node.
//
// This header is the interface only: the applications use a system without
// knowing which one runs.  The six systems themselves belong to the
// evaluation harness (`pulse bench app`, built with PULSE_BUILD_BENCHMARKS),
// whose developer notes say how to add one; a program of your own implements
// AppSystem directly.
//
// Thread-safety: a system is used by one thread (its Client is
// single-threaded).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pulse/client.h"
#include "pulse/ds/aggregate.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/unordered_map.h"
#include "pulse/status.h"

namespace pulse::apps {

class TsvTree;

// One record a B+tree scan returns: its key and the checksum of its value
// (the sum of the value's 64-bit words; see wiredtiger.h).
struct ScanRecord {
  uint64_t key = 0;
  uint64_t checksum = 0;
  bool operator==(const ScanRecord&) const = default;
};

// What a system counts beyond the Client's counters, for `pulse bench app`.
struct AppSystemStats {
  // Requests the CPU node re-issued to another memory node at a node
  // boundary that ClientCounters::reissues does not count (the rpc
  // systems'): cross-node hops, cumulative.
  uint64_t reissues = 0;
  // Cumulative counters (the bench reports their change over the measured
  // phase), e.g. cache hits and misses, and settings (reported as they are),
  // e.g. the cache's budget.
  std::vector<std::pair<std::string, uint64_t>> counters;
  std::vector<std::pair<std::string, double>> settings;
};

class AppSystem {
 public:
  virtual ~AppSystem() = default;
  // The name --system accepts ("pulse", "pulse-acc", ...).
  virtual std::string name() const = 0;
  // The connected client the application loads its data with.
  virtual Client* client() = 0;

  // The value of `key` in `map`, or nullopt.
  virtual Result<std::optional<uint64_t>> HashLookup(ds::UnorderedMap& map, uint64_t key) = 0;
  // The first `count` records with keys >= start, in key order, of a tree
  // whose values are far addresses of WiredTiger value slots.
  virtual Result<std::vector<ScanRecord>> BTreeScan(ds::BTree& tree, uint64_t start, uint32_t count) = 0;
  // sum/min/max/count of the readings with ticks in [lo, hi].
  virtual Result<ds::Aggregate> TsvAggregate(TsvTree& tree, uint64_t lo, uint64_t hi) = 0;

  // Object access at the CPU node (a caching system may serve these from
  // its cache).  Default: the client's one-sided reads and writes.
  virtual Status ReadObject(uint64_t addr, void* dst, size_t length) { return client()->Read(addr, dst, length); }
  virtual Status WriteObject(uint64_t addr, const void* src, size_t length) {
    return client()->Write(addr, src, length);
  }

  // This system's own figures (default: none).
  virtual AppSystemStats Stats() const { return {}; }
};

}  // namespace pulse::apps
