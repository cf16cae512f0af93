// Test hooks of the data structures, kept out of the public headers: the
// structures name this struct a friend, and only tests include this file.
// Not thread-safe, like the handles it reaches into.
#pragma once

#include <cstdint>

#include "pulse/ds/btree.h"
#include "pulse/ds/list.h"

namespace pulse::ds::internal {

struct TestingHooks {
  // The `n`-th far write of the handle from now on (0: the next) fails with
  // Unavailable without being sent, as if its memory node had died.  -1
  // turns it off.
  static void FailWrite(BTree& tree, int64_t n) { tree.fail_write_in_ = n; }
  static void FailWrite(List& list, int64_t n) { list.fail_write_in_ = n; }
};

}  // namespace pulse::ds::internal
