// Where a transaction's time goes at one replica (docs/tx.md "Where the
// time goes"): per stage, a histogram of durations in buckets a quarter of
// a power of two wide (about 19% apart), cumulative for the node's life so
// that a reader (`pulse bench tx`) takes the difference of two snapshots
// and reads percentiles of just its measured phase.
//
// Not thread-safe (the memory node's network thread owns it).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse::tx {

class StageHistogram {
 public:
  static constexpr size_t kBuckets = 112;  // up to 2^28 us (~4.5 minutes)

  void Add(uint64_t us);
  // {"count": n, "sum_us": s, "buckets": [..]} (trailing empty buckets left out).
  nlohmann::json ToJson() const;

  // `after` minus `before` (two ToJson snapshots of one histogram).
  // Errors: InvalidArgument if either is not such a snapshot.
  static Result<StageHistogram> Between(const nlohmann::json& before, const nlohmann::json& after);
  uint64_t count() const { return count_; }
  double mean_us() const { return count_ == 0 ? 0 : static_cast<double>(sum_us_) / count_; }
  // The upper bound of the bucket holding quantile q (0 < q <= 1), in us; 0 if empty.
  double Percentile(double q) const;

 private:
  static size_t BucketOf(uint64_t us);
  static double UpperBound(size_t bucket);
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t sum_us_ = 0;
};

}  // namespace pulse::tx
