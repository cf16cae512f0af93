// pulse::ds::Aggregate: the answer of the library's offloaded range
// aggregations (List::AggregateRange, BTree::AggregateRange).
#pragma once

#include <cstdint>
#include <limits>

namespace pulse::ds {

// sum/min/max/count of a range of uint64 values; sum wraps modulo 2^64.
// With count == 0, min is UINT64_MAX and max is 0.
struct Aggregate {
  uint64_t sum = 0;
  uint64_t min = std::numeric_limits<uint64_t>::max();
  uint64_t max = 0;
  uint64_t count = 0;
  bool operator==(const Aggregate&) const = default;
};

}  // namespace pulse::ds
