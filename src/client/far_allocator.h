// The client's allocator: carves objects out of slabs obtained from memory
// nodes, following an AllocationPolicy.  Objects freed are reused for
// allocations of the same size.  Not thread-safe.
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

  FarAllocator(AllocationPolicy policy, uint64_t slab_bytes, uint32_t nodes, SlabSource source)
      : policy_(policy), slab_bytes_(slab_bytes), nodes_(nodes), source_(std::move(source)) {}

  Result<uint64_t> Allocate(uint64_t bytes, std::optional<uint32_t> node = std::nullopt);
  Status Free(uint64_t addr);
  // True if [addr, addr+len) lies inside memory this allocator obtained.
  bool Owns(uint64_t addr, uint64_t len) const;

 private:
  struct Slab {
    uint64_t next = 0;
    uint64_t end = 0;
  };
  Result<uint64_t> AllocateOn(uint32_t node, uint64_t bytes);

  AllocationPolicy policy_;
  uint64_t slab_bytes_;
  uint32_t nodes_;
  SlabSource source_;
  std::vector<Slab> current_;                           // per node
  std::map<uint64_t, uint64_t> obtained_;               // base -> length, every range from the cluster
  std::unordered_map<uint64_t, uint64_t> live_;         // object -> size
  std::map<uint64_t, std::vector<uint64_t>> free_;      // size -> freed objects
  uint32_t next_node_ = 0;
};

}  // namespace pulse
