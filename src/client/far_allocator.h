// The client's allocator: carves objects out of slabs obtained from memory
// nodes, following an AllocationPolicy, or on the node the caller names.
// Objects freed are reused for allocations of the same size: of any node
// when the policy places the object, of the named node when the caller
// names one.  Where pages move between memory nodes (docs/tier.md), "on
// node n" means where the page directory puts the memory now (`where`),
// not where it was obtained.  Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "pulse/client.h"

namespace pulse {

class FarAllocator {
 public:
  // Obtains a new range of at least `bytes` on `node` from the cluster;
  // returns its base and length.
  using SlabSource = std::function<Result<std::pair<uint64_t, uint64_t>>(uint32_t node, uint64_t bytes)>;

  // The memory node holding `addr` now (nullopt: unknown).
  using NodeOfFn = std::function<std::optional<uint32_t>(uint64_t addr)>;

  // `where` empty: memory stays on the node it was obtained from.
  FarAllocator(AllocationPolicy policy, uint64_t slab_bytes, uint32_t nodes, SlabSource source, NodeOfFn where = {})
      : policy_(policy), slab_bytes_(slab_bytes), nodes_(nodes), source_(std::move(source)), where_(std::move(where)) {}

  // On `node` if given (any policy; kPartitioned requires it), else where
  // the policy says.  Errors: InvalidArgument (size 0, a node that does not
  // exist, kPartitioned without one), the source's (ResourceExhausted ...).
  Result<uint64_t> Allocate(uint64_t bytes, std::optional<uint32_t> node = std::nullopt);
  Status Free(uint64_t addr);
  // True if [addr, addr+len) lies inside memory this allocator obtained.
  bool Owns(uint64_t addr, uint64_t len) const;

 private:
  struct Slab {
    uint64_t next = 0;
    uint64_t end = 0;
  };
  struct Object {
    uint64_t bytes = 0;
    uint32_t node = 0;
  };
  // New memory on `node`, or a freed object of this size: on `node` if
  // `pinned`, else on any node.
  Result<uint64_t> AllocateOn(uint32_t node, uint64_t bytes, bool pinned);
  // Whether `addr`, obtained on `node`, is still there.
  bool StillOn(uint64_t addr, uint32_t node) const;

  AllocationPolicy policy_;
  uint64_t slab_bytes_;
  uint32_t nodes_;
  SlabSource source_;
  NodeOfFn where_;
  std::vector<Slab> current_;                           // per node
  std::map<uint64_t, uint64_t> obtained_;               // base -> length, every range from the cluster
  std::unordered_map<uint64_t, Object> live_;           // object -> its size and node
  std::map<std::pair<uint64_t, uint32_t>, std::vector<uint64_t>> free_;  // (size, node) -> freed objects
  uint32_t next_node_ = 0;
};

}  // namespace pulse
