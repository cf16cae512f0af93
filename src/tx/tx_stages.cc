// Per-stage duration histograms of a replica (tx_stages.h).
#include "tx/tx_stages.h"

#include <bit>
#include <cmath>

namespace pulse::tx {

// Bucket 0 holds 0 us; bucket 4k + j (k >= 0, j < 4) holds
// [2^k * (1 + j/4), 2^k * (1 + (j+1)/4)) us, so four buckets per doubling.
size_t StageHistogram::BucketOf(uint64_t us) {
  if (us == 0) return 0;
  const int k = std::bit_width(us) - 1;  // 2^k <= us < 2^(k+1)
  const uint64_t quarter = k >= 2 ? (us >> (k - 2)) & 3 : (k == 1 ? (us & 1) * 2 : 0);
  const size_t b = 1 + static_cast<size_t>(k) * 4 + static_cast<size_t>(quarter);
  return b < kBuckets ? b : kBuckets - 1;
}

double StageHistogram::UpperBound(size_t bucket) {
  if (bucket == 0) return 0;
  const size_t k = (bucket - 1) / 4, j = (bucket - 1) % 4;
  return std::ldexp(1.0 + (j + 1) / 4.0, static_cast<int>(k));
}

void StageHistogram::Add(uint64_t us) {
  ++buckets_[BucketOf(us)];
  ++count_;
  sum_us_ += us;
}

nlohmann::json StageHistogram::ToJson() const {
  size_t used = kBuckets;
  while (used > 0 && buckets_[used - 1] == 0) --used;
  return {{"count", count_}, {"sum_us", sum_us_}, {"buckets", std::vector<uint64_t>(buckets_.begin(), buckets_.begin() + used)}};
}

Result<StageHistogram> StageHistogram::Between(const nlohmann::json& before, const nlohmann::json& after) {
  auto read = [](const nlohmann::json& j, StageHistogram* h) -> Status {
    if (!j.is_object() || !j.contains("count") || !j.contains("sum_us") || !j.contains("buckets") ||
        !j["buckets"].is_array() || j["buckets"].size() > kBuckets)
      return Status::InvalidArgument("tx stages: not a stage histogram: " + j.dump());
    h->count_ = j["count"].get<uint64_t>();
    h->sum_us_ = j["sum_us"].get<uint64_t>();
    for (size_t i = 0; i < j["buckets"].size(); ++i) h->buckets_[i] = j["buckets"][i].get<uint64_t>();
    return Status::Ok();
  };
  StageHistogram a, b;
  PULSE_RETURN_IF_ERROR(read(before, &a));
  PULSE_RETURN_IF_ERROR(read(after, &b));
  StageHistogram d;
  d.count_ = b.count_ - a.count_;
  d.sum_us_ = b.sum_us_ - a.sum_us_;
  for (size_t i = 0; i < kBuckets; ++i) d.buckets_[i] = b.buckets_[i] - a.buckets_[i];
  return d;
}

double StageHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  const double want = q * static_cast<double>(count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (static_cast<double>(seen) >= want) return UpperBound(i);
  }
  return UpperBound(kBuckets - 1);
}

}  // namespace pulse::tx
