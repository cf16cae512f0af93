// YCSB's number generators (site.ycsb.generator), reimplemented from their
// published algorithms; see include/pulse/apps/ycsb.h.
#include <algorithm>
#include <cmath>
#include <functional>

#include "pulse/apps/ycsb.h"

namespace pulse::apps::ycsb {
namespace {

constexpr uint64_t kFnvOffsetBasis64 = 0xCBF29CE484222325ull;
constexpr uint64_t kFnvPrime64 = 1099511628211ull;

// sum_{i=from+1..to} 1/i^theta added to `sum` (YCSB's incremental zeta).
double ZetaFrom(uint64_t from, uint64_t to, double theta, double sum) {
  for (uint64_t i = from; i < to; ++i) sum += 1.0 / std::pow(static_cast<double>(i + 1), theta);
  return sum;
}

// zeta(n, theta) for item counts too large to sum term by term (the
// scrambled generator's 10^10 with a theta other than 0.99, for which YCSB
// itself would spend minutes): the first 10^6 terms exactly, the rest by
// Euler-Maclaurin (integral plus the trapezoid correction).
double ZetaLarge(uint64_t n, double theta) {
  constexpr uint64_t kExact = 1'000'000;
  if (n <= kExact) return ZetaFrom(0, n, theta, 0.0);
  const double m = static_cast<double>(kExact), x = static_cast<double>(n);
  const double integral = (std::pow(x, 1 - theta) - std::pow(m, 1 - theta)) / (1 - theta);
  return ZetaFrom(0, kExact, theta, 0.0) + integral + (std::pow(x, -theta) - std::pow(m, -theta)) / 2;
}

}  // namespace

uint64_t FnvHash64(uint64_t v) {
  uint64_t h = kFnvOffsetBasis64;
  for (int i = 0; i < 8; ++i) {
    h ^= v & 0xff;
    v >>= 8;
    h *= kFnvPrime64;
  }
  // Java's Math.abs on a long: negate negatives, except Long.MIN_VALUE.
  const int64_t s = static_cast<int64_t>(h);
  return s < 0 && s != INT64_MIN ? static_cast<uint64_t>(-s) : h;
}

uint64_t UniformGenerator::Next(Random& r) {
  if (interval_ == 0) return r.NextU64();
  // YCSB: Math.abs(nextLong()) % interval + lb; 63 random bits here.
  return lb_ + (r.NextU64() >> 1) % interval_;
}

double ZipfianGenerator::Zeta(uint64_t n, double theta) { return ZetaFrom(0, n, theta, 0.0); }

ZipfianGenerator::ZipfianGenerator(uint64_t min, uint64_t max, double theta, double zetan)
    : items_(max - min + 1), base_(min), theta_(theta) {
  zeta2theta_ = Zeta(2, theta_);
  alpha_ = 1.0 / (1.0 - theta_);
  zetan_ = zetan >= 0 ? zetan : Zeta(items_, theta_);
  count_for_zeta_ = items_;
  // YCSB computes eta from the constructor's item count, also after the
  // count grows; kept for fidelity.
  eta_ = (1 - std::pow(2.0 / static_cast<double>(items_), 1 - theta_)) / (1 - zeta2theta_ / zetan_);
}

void ZipfianGenerator::SetItemCount(uint64_t n) {
  zetan_ = n > count_for_zeta_ ? ZetaFrom(count_for_zeta_, n, theta_, zetan_) : Zeta(n, theta_);
  count_for_zeta_ = n;
  eta_ = (1 - std::pow(2.0 / static_cast<double>(items_), 1 - theta_)) / (1 - zeta2theta_ / zetan_);
}

uint64_t ZipfianGenerator::NextLong(Random& r, uint64_t item_count) {
  if (item_count != count_for_zeta_) SetItemCount(item_count);
  const double u = r.NextDouble();
  const double uz = u * zetan_;
  if (uz < 1.0) return base_;
  if (uz < 1.0 + std::pow(0.5, theta_)) return base_ + 1;
  const double v = static_cast<double>(item_count) * std::pow(eta_ * u - eta_ + 1, alpha_);
  return base_ + std::min<uint64_t>(static_cast<uint64_t>(v), item_count - 1);
}

ScrambledZipfianGenerator::ScrambledZipfianGenerator(uint64_t min, uint64_t max, double theta)
    : min_(min),
      item_count_(max - min + 1),
      gen_(0, kItemCount, theta,
           theta == ZipfianGenerator::kZipfianConstant ? kZetan : ZetaLarge(kItemCount + 1, theta)) {}

uint64_t ScrambledZipfianGenerator::Next(Random& r) {
  return min_ + FnvHash64(gen_.Next(r)) % item_count_;
}

void AcknowledgedCounterGenerator::Acknowledge(uint64_t value) {
  if (value != limit_ + 1) {
    pending_.push_back(value);
    std::push_heap(pending_.begin(), pending_.end(), std::greater<>());
    return;
  }
  limit_ = value;
  while (!pending_.empty() && pending_.front() == limit_ + 1) {
    std::pop_heap(pending_.begin(), pending_.end(), std::greater<>());
    limit_ = pending_.back();
    pending_.pop_back();
  }
}

SkewedLatestGenerator::SkewedLatestGenerator(const AcknowledgedCounterGenerator* basis)
    : basis_(basis), zipfian_(0, std::max<uint64_t>(basis->Last(), 1) - 1) {}

uint64_t SkewedLatestGenerator::Next(Random& r) {
  const uint64_t last = basis_->Last();
  if (last == 0) return 0;
  return last - zipfian_.NextLong(r, last);
}

}  // namespace pulse::apps::ycsb
