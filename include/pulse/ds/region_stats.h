// pulse::ds::RegionStats: how a chained-hash structure's (UnorderedMap,
// UnorderedSet, Bimap) offloaded insert used its pool of pre-allocated
// regions (the ALLOC instruction's regions, seed 000 C.2).
#pragma once

#include <cstdint>

namespace pulse::ds {

struct RegionStats {
  uint64_t exhausted = 0;          // insert requests the engine stopped for lack of
                                   // regions (then replenished and re-issued)
  uint64_t allocated = 0;          // regions allocated with Client::Allocate
  uint64_t offloaded_inserts = 0;  // insert traversals that ran on memory nodes
};

}  // namespace pulse::ds
