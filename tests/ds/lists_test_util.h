// Helpers of ds_lists_test: the operation count every test adds to (printed
// at the end of the run), and the reference aggregation.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "pulse/ds/aggregate.h"

namespace pulse::ds::testing {

// Operations run against the structures: each update is one, each read is
// one per execution mode it runs in.
inline uint64_t& OpsCounted() {
  static uint64_t ops = 0;
  return ops;
}

// sum/min/max/count of the values v(e) of the elements e with
// lo <= k(e) <= hi, as the library's Aggregate.
template <typename Range, typename Key, typename Value>
Aggregate ReferenceAggregate(const Range& range, uint64_t lo, uint64_t hi, Key k, Value v) {
  Aggregate a;
  for (const auto& e : range) {
    const uint64_t key = k(e);
    if (key < lo || key > hi) continue;
    const uint64_t value = v(e);
    a.sum += value;
    a.min = std::min(a.min, value);
    a.max = std::max(a.max, value);
    ++a.count;
  }
  return a;
}

}  // namespace pulse::ds::testing
