// pulse::ds::UnorderedSet: a far-memory hash set of uint64 keys with chained
// hashing, like boost::unordered_set<uint64_t>.
//
// It is UnorderedMap's chained-hash core (src/ds/chained_hash.h) with the
// value unused: Contains() is the offloaded chain walk, Insert() the one
// traversal that walks, allocates the node near memory from pre-allocated
// regions (ALLOC) and links it, both run where the client's dispatch policy
// (or the set's execution mode) decides; Erase() and rehashing run at the
// CPU node.  See unordered_map.h for the bucket growth and region policy.
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches the set and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  Destroying the set does not free its
// far memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "pulse/client.h"
#include "pulse/ds/region_stats.h"
#include "pulse/ds/unordered_map.h"
#include "pulse/status.h"

namespace pulse::ds {

// The set's options are the map's (one chained-hash core): buckets, growth,
// the offloaded insert's regions, and `mode`, where Contains() and Insert()
// run (unset: the client's dispatch policy).
using UnorderedSetOptions = UnorderedMapOptions;

class UnorderedSet {
 public:
  // Allocates the bucket array.  `client` must outlive the set.  Errors as
  // UnorderedMap::Create.
  static Result<std::unique_ptr<UnorderedSet>> Create(Client* client,
                                                      const UnorderedSetOptions& options = {});
  ~UnorderedSet();

  // Inserts key; true if it was absent.
  Result<bool> Insert(uint64_t key);
  // Removes key; true if it was present (its node returns to the region pool).
  Result<bool> Erase(uint64_t key);
  // Whether key is in the set: an offloaded traversal.
  Result<bool> Contains(uint64_t key);

  // As UnorderedMap::Rehash.
  Status Rehash(uint64_t buckets);
  size_t size() const;
  bool empty() const { return size() == 0; }
  uint64_t bucket_count() const;
  const RegionStats& region_stats() const;
  void set_mode(std::optional<ExecutionMode> mode);

 private:
  explicit UnorderedSet(std::unique_ptr<internal::ChainedHash> hash);
  std::unique_ptr<internal::ChainedHash> hash_;
};

}  // namespace pulse::ds
