// The WiredTiger-like application (TC, seed 000 section 6, seed 001
// section 7): a pulse::ds::BTree index from 8-byte keys to the far address
// of a 240-byte value, under YCSB workload E (95 % range scans of 1..100
// records from a zipfian start key, 5 % inserts).
//
// A value lives in a 256-byte slot (240 bytes of value, 16 of padding; see
// src/apps/wiredtiger/iterators/wt_nodes.h).  A scan returns each record's
// key and the checksum of its value (the sum of its 30 64-bit words), so it
// reads every value it returns.  OffloadedScan() is the pulse iterator
// compiled from C (wt_scan.c): a lower-bound descent, then the leaf chain,
// visiting each value slot; at most 128 records per scan.
//
// Thread-safety: not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "pulse/apps/app_system.h"
#include "pulse/apps/ycsb.h"
#include "pulse/client.h"
#include "pulse/ds/btree.h"
#include "pulse/status.h"

namespace pulse::apps {

inline constexpr uint32_t kWiredTigerMaxScan = 128;

// The value of record `key` written by its `version`-th write: 30 words
// derived from both (what tests and the loader agree on).
std::vector<uint64_t> WiredTigerValue(uint64_t key, uint64_t version);
uint64_t WiredTigerChecksum(const std::vector<uint64_t>& value);

// The scan iterator through `client`: the first `count` (<= 128) records
// with keys >= start.  `mode` overrides the client's dispatch policy;
// `iterations` receives the traversal's iteration count.  Errors:
// InvalidArgument (count 0 or > 128), Internal (a traversal fault).
Result<std::vector<ScanRecord>> OffloadedScan(Client* client, uint64_t root, uint64_t start, uint32_t count,
                                              std::optional<ExecutionMode> mode, uint32_t* iterations = nullptr);

struct WiredTigerOptions {
  uint64_t records = 100000;
  uint64_t operations = 100000;  // YCSB operationcount (sizes the zipfian chooser)
  uint64_t seed = 42;
  // Partitioned allocation (seed 000 C.2, Fig. 5): the tree's nodes and the
  // value slots of keys below the split on one memory node, the others on
  // another (needs a client with AllocationPolicy::kPartitioned).  Unset:
  // everything placed by the client's policy (round robin: uniform).
  std::optional<ds::BTreePartition> partition;
};

class WiredTiger {
 public:
  // Creates the tree and loads the records of YCSB workload E (keys
  // FnvHash64(0..records-1)) through system->client().
  static Result<std::unique_ptr<WiredTiger>> Load(AppSystem* system, const WiredTigerOptions& options);
  // The next YCSB-E operation.
  ycsb::Operation NextOperation() { return workload_->Next(); }
  // Runs a scan (through the system's BTreeScan) or an insert (a new value
  // slot, then BTree::Insert).  Other operations: InvalidArgument.
  // Returns the scan's records (empty for an insert).
  Result<std::vector<ScanRecord>> Serve(const ycsb::Operation& op);
  // The scan's answer from the loader's own copy of the data.
  std::vector<ScanRecord> NativeScan(uint64_t start, uint32_t count) const;

  ds::BTree& tree() { return *tree_; }
  size_t size() const { return checksums_.size(); }

 private:
  WiredTiger() = default;
  Status InsertRecord(uint64_t key);
  AppSystem* system_ = nullptr;
  std::unique_ptr<ds::BTree> tree_;
  std::unique_ptr<ycsb::Workload> workload_;
  std::map<uint64_t, uint64_t> checksums_;  // key -> value checksum (the reference)
  std::optional<ds::BTreePartition> partition_;
};

}  // namespace pulse::apps
