// The interface `pulse bench ds` drives: one far-memory data structure,
// loaded with keys and looked up in a chosen execution mode.  Each family of
// structures provides its targets in its own file (ds_bench_targets_*.cc)
// through an Add...Targets function that `pulse bench ds` calls.
//
// Thread-safety: a target is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::bench {

class DsBenchTarget {
 public:
  virtual ~DsBenchTarget() = default;
  // The structure's name as printed and accepted by --structures
  // (e.g. "unordered_map", "map", "btree").
  virtual std::string name() const = 0;
  // Creates the structure on `client` (which outlives the target) and
  // inserts the keys 0..n-1 in a shuffled order (fixed seed), each with
  // value key * 2 + 1 where the structure has values.
  virtual Status Load(Client* client, uint64_t n) = 0;
  // One lookup of `key` (find for maps and sets, find by value for lists)
  // with its read traversal run in `mode`.  Returns whether key was found;
  // the caller checks that against the loaded keys.
  virtual Result<bool> Lookup(uint64_t key, ExecutionMode mode) = 0;
};

using DsBenchTargets = std::vector<std::unique_ptr<DsBenchTarget>>;

}  // namespace pulse::bench
