// `pulse bench ds` targets for the ordered trees: map, multimap, set,
// multiset (red-black), avl_tree, splay_tree (splaying on lookups, the
// default) and scapegoat_tree.
#pragma once

#include "bench/ds_bench_target.h"

namespace pulse::bench {

// Appends one target per ordered tree to `out`.
void AddTreeBenchTargets(DsBenchTargets& out);

}  // namespace pulse::bench
