// `pulse bench ds` targets for the list and hash families built on
// pulse::ds: forward_list, unordered_set, bimap (looked up by left) and
// skip_list.
#pragma once

#include "bench/ds_bench_target.h"

namespace pulse::bench {

// Appends one target per structure to `out`.
void AddListBenchTargets(DsBenchTargets& out);

}  // namespace pulse::bench
