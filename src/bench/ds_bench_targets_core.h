// `pulse bench ds` targets of the first data structures: unordered_map,
// list, btree and btree_partitioned (the B+tree with keys below n/2 on
// memory node 0 and the rest on node 1; its client must use
// AllocationPolicy::kPartitioned, see src/bench/ds_bench.h).
#pragma once

#include "bench/ds_bench_target.h"

namespace pulse::bench {

void AddCoreBenchTargets(DsBenchTargets& out);

}  // namespace pulse::bench
