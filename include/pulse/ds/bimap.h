// pulse::ds::Bimap: a far-memory bidirectional map between uint64 "left"
// and "right" values, like boost::bimap<unordered_set_of<uint64_t>,
// unordered_set_of<uint64_t>>: each left value and each right value appears
// in at most one pair.
//
// Two chained-hash indexes (src/ds/chained_hash.h), left -> right and
// right -> left, each with its own bucket array and chains.  FindByLeft()
// and FindByRight() are the offloaded chain walk; Insert() checks the right
// side, then inserts into each index with the offloaded ALLOC insert; the
// erases run at the CPU node.  See unordered_map.h for the bucket growth and
// the region policy.
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches the bimap and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  Destroying the bimap does not free
// its far memory.
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

struct BimapOptions {
  uint64_t buckets = 1024;  // per side
  // Where the finds and the inserts run; unset: the client's dispatch policy.
  std::optional<ExecutionMode> mode;
  // Bucket array growth (each side); <= 0 keeps the bucket count fixed.
  double max_load_factor = 1.0;
  // The offloaded insert's regions (see UnorderedMapOptions).
  uint32_t regions_per_request = 1;
  uint32_t region_batch = 32;
};

class Bimap {
 public:
  // Allocates both bucket arrays.  `client` must outlive the bimap.  Errors
  // as UnorderedMap::Create.
  static Result<std::unique_ptr<Bimap>> Create(Client* client, const BimapOptions& options = {});
  ~Bimap();

  // Inserts the pair (left, right) if neither left nor right is present
  // (true); otherwise leaves the bimap unchanged (false).
  Result<bool> Insert(uint64_t left, uint64_t right);
  // The right value paired with left / the left value paired with right.
  Result<std::optional<uint64_t>> FindByLeft(uint64_t left);
  Result<std::optional<uint64_t>> FindByRight(uint64_t right);
  // Removes the pair holding left / right; true if there was one.
  Result<bool> EraseByLeft(uint64_t left);
  Result<bool> EraseByRight(uint64_t right);

  size_t size() const;
  bool empty() const { return size() == 0; }
  // Both sides' region pools together.
  RegionStats region_stats() const;
  void set_mode(std::optional<ExecutionMode> mode);

 private:
  Bimap(std::unique_ptr<internal::ChainedHash> left, std::unique_ptr<internal::ChainedHash> right);
  // Erases key from `from` and the value it was paired with from `to`.
  static Result<bool> ErasePair(internal::ChainedHash& from, internal::ChainedHash& to,
                                uint64_t key);

  std::unique_ptr<internal::ChainedHash> left_;   // left -> right
  std::unique_ptr<internal::ChainedHash> right_;  // right -> left
};

}  // namespace pulse::ds
