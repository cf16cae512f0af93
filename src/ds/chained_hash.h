// The chained-hashing core shared by UnorderedMap, UnorderedSet and Bimap:
// a far bucket array of chain heads, chains of pulse_ds_umap_node
// {key, value, next}, an offloaded find (ds_umap_find.c) and an offloaded
// insert that allocates its node near memory with ALLOC (written in pulse
// assembly in chained_hash.cc: the C compiler has no form for ALLOC),
// rehashing, and the pool of pre-allocated regions that ALLOC draws from.
//
// Layout: the bucket array is preceded by 16 bytes so that every bucket
// slot s has a "pseudo-node" at s - 16 whose next field is s: the insert
// traversal starts there and comes back there to link the new node as the
// chain's head, so the whole insert (walk + allocate + link) is one request.
//
// Region policy (seed 000 C.2): ALLOC pops regions listed in the request's
// scratch pad.  The new node and the bucket slot are both written on the
// memory node that owns the bucket array, so the regions must live there.
// The CPU node keeps a pool of regions per memory node; a request carries up
// to `regions_per_request` of the bucket array's node (possibly none).  When
// the engine stops with "allocation regions exhausted", the CPU node
// replenishes the pool with `region_batch` regions allocated on that node
// (Client::Allocate; under a placement policy that ignores the node, the
// objects that land elsewhere are pooled for their own node) and re-issues
// the traversal from the returned state.  Unused regions come back with the
// answer and return to the pool; erased nodes return to the pool of their
// node.  Replenishing lazily means an insert of a present key allocates
// nothing, and one extra round trip per `region_batch` new keys.
//
// Thread-safety: not thread-safe; writers must hold the library's lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "pulse/client.h"
#include "pulse/ds/region_stats.h"
#include "pulse/status.h"

namespace pulse::ds::internal {

struct ChainedHashOptions {
  uint64_t buckets = 1024;
  // Grow (double) the bucket array when size / buckets exceeds this;
  // <= 0 keeps the bucket count fixed.
  double max_load_factor = 1.0;
  std::optional<ExecutionMode> mode;  // where find and insert run
  uint32_t regions_per_request = 1;   // 0..PULSE_DS_CHASH_MAX_REGIONS
  uint32_t region_batch = 32;         // regions allocated per replenishment
};

// The core's options from a public structure's options (UnorderedMapOptions,
// UnorderedSetOptions, BimapOptions: the same fields).
template <typename PublicOptions>
ChainedHashOptions ToChainedHashOptions(const PublicOptions& o) {
  ChainedHashOptions c;
  c.buckets = o.buckets;
  c.max_load_factor = o.max_load_factor;
  c.mode = o.mode;
  c.regions_per_request = o.regions_per_request;
  c.region_batch = o.region_batch;
  return c;
}

class ChainedHash {
 public:
  struct Lookup {
    bool found = false;
    uint64_t value = 0;
    uint64_t node = 0;  // far address of the node holding the key
  };
  struct Inserted {
    bool inserted = false;  // false: the key was present, unchanged
    uint64_t value = 0;     // the present key's value when !inserted
    uint64_t node = 0;      // the new node, or the one holding the key
  };

  static Result<std::unique_ptr<ChainedHash>> Create(Client* client,
                                                     const ChainedHashOptions& options);

  Result<Lookup> Find(uint64_t key);
  // Inserts key -> value if absent: one traversal that walks the chain and,
  // if the key is absent, allocates (ALLOC), writes and links the new node.
  // May rehash afterwards.
  Result<Inserted> Insert(uint64_t key, uint64_t value);
  // Overwrites the value of the node `node` (from Find or Insert).
  Status Assign(uint64_t node, uint64_t value);
  // Removes key; its value if it was present.
  Result<std::optional<uint64_t>> Erase(uint64_t key);
  // Moves every node into a new array of `buckets` buckets (CPU node).
  Status Rehash(uint64_t buckets);

  size_t size() const { return size_; }
  uint64_t bucket_count() const { return buckets_; }
  double max_load_factor() const { return options_.max_load_factor; }
  void set_max_load_factor(double f) { options_.max_load_factor = f; }
  std::optional<ExecutionMode> mode() const { return options_.mode; }
  void set_mode(std::optional<ExecutionMode> mode) { options_.mode = mode; }
  const RegionStats& region_stats() const { return stats_; }
  // The far address of key's bucket slot in the current bucket array.
  uint64_t SlotOf(uint64_t key) const;

 private:
  ChainedHash(Client* client, const ChainedHashOptions& options)
      : client_(client), options_(options) {}
  Result<uint64_t> NewBucketArray(uint64_t buckets);  // zeroed; returns slot 0
  uint32_t BucketNode() const;
  Status Replenish(uint32_t node);
  Status MaybeGrow();

  Client* client_;
  ChainedHashOptions options_;
  uint64_t bucket_array_ = 0;  // address of slot 0 (the allocation starts 16 bytes before)
  uint64_t buckets_ = 0;
  size_t size_ = 0;
  std::map<uint32_t, std::vector<uint64_t>> regions_;  // memory node -> free regions
  RegionStats stats_;
};

}  // namespace pulse::ds::internal
