// pulse::ds::UnorderedMap: a far-memory hash map of uint64 keys to uint64
// values with chained hashing, like boost::unordered_map.
//
// The bucket array and the chain nodes {key, value, next} live in far memory
// (the array placed by the client's AllocationPolicy, new nodes on the
// array's memory node, see below).  Find() is a pulse iterator compiled from
// C (src/ds/iterators/ds_umap_find.c): init() at the CPU node hashes the
// key to its bucket slot's address (no read), and the traversal's first
// iteration loads the chain's head from the slot; offloaded, a lookup whose
// bucket and chain share a memory node is one request and one response.  The
// walk runs offloaded on the memory nodes or here over one-sided reads, as
// the client's dispatch policy (or the map's execution mode) decides.
//
// Insert() is one traversal too (seed 000 C.2): it walks the chain and, if
// the key is absent, allocates the node from pre-allocated regions listed in
// its scratch pad (the ALLOC instruction), writes it and links it as the
// chain's head; offloaded, that is a single request, which the memory node
// deduplicates on retransmission because it stores.  The same program runs at
// the CPU node when the dispatch (or the mode) says so.  The CPU node keeps
// the pool of regions and replenishes it when the engine reports it
// exhausted; the policy is described in src/ds/chained_hash.h.  Erase() and
// rehashing run at the CPU node with Client::Read/Write.  The bucket array
// doubles when size() / bucket_count() exceeds max_load_factor (a
// max_load_factor <= 0 keeps the bucket count fixed).
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches the map and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  The map uses its Client, which is
// itself single-threaded.  Destroying the map does not free its far memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "pulse/client.h"
#include "pulse/ds/region_stats.h"
#include "pulse/status.h"

namespace pulse::ds {
namespace internal {
class ChainedHash;
}

struct UnorderedMapOptions {
  uint64_t buckets = 1024;
  // Where Find() and Insert() run; unset: the client's dispatch policy decides.
  std::optional<ExecutionMode> mode;
  // Grow (double) the bucket array when size / buckets exceeds this (boost's
  // default 1.0); <= 0 keeps the bucket count fixed (high-load workloads).
  double max_load_factor = 1.0;
  // Pre-allocated regions each insert request carries (0..16) and how many
  // the CPU node allocates when the engine reports them exhausted.
  uint32_t regions_per_request = 1;
  uint32_t region_batch = 32;
};

class UnorderedMap {
 public:
  // Allocates and zeroes the bucket array.  `client` must outlive the map.
  // Errors: InvalidArgument (no buckets, regions_per_request > 16,
  // region_batch 0), those of Allocate/Write.
  static Result<std::unique_ptr<UnorderedMap>> Create(Client* client,
                                                      const UnorderedMapOptions& options = {});

  ~UnorderedMap();

  // Inserts key -> value if key is absent (true); leaves the map unchanged
  // if it is present (false), like std::unordered_map::insert.  One
  // traversal with ALLOC (see above); may rehash afterwards.
  Result<bool> Insert(uint64_t key, uint64_t value);
  // Inserts or overwrites; true if the key was inserted.  The insert
  // traversal, then (key present) one write of the value.
  Result<bool> InsertOrAssign(uint64_t key, uint64_t value);
  // Removes key; true if it was present.  Its node returns to the region
  // pool, for a later insert to reuse.
  Result<bool> Erase(uint64_t key);
  // The value of key, or nullopt.  An offloaded traversal (see above).
  Result<std::optional<uint64_t>> Find(uint64_t key);

  // Moves every element into a new bucket array of `buckets` buckets (at the
  // CPU node).  Errors: InvalidArgument (0), those of Read/Write/Allocate.
  Status Rehash(uint64_t buckets);

  size_t size() const;
  bool empty() const { return size() == 0; }
  uint64_t bucket_count() const;
  // The far address of key's bucket slot (the word holding its chain's
  // first node) in the current bucket array: where other executors of Find
  // start (include/pulse/rpc_ds.h).  Changes when the map rehashes.
  uint64_t BucketAddress(uint64_t key) const;
  double load_factor() const { return static_cast<double>(size()) / bucket_count(); }
  double max_load_factor() const;
  // Takes effect at the next insert; <= 0 fixes the current bucket count.
  void set_max_load_factor(double f);
  const RegionStats& region_stats() const;

  void set_mode(std::optional<ExecutionMode> mode);
  std::optional<ExecutionMode> mode() const;

 private:
  explicit UnorderedMap(std::unique_ptr<internal::ChainedHash> hash);

  std::unique_ptr<internal::ChainedHash> hash_;
};

}  // namespace pulse::ds
