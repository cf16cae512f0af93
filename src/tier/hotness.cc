#include "pulse/tier/hotness.h"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace pulse::tier {

double SteadyClock::NowSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Status HotnessParams::Validate() const {
  auto bad = [](const char* field, double v) {
    return Status::InvalidArgument(fmt::format("hotness parameters: {} = {} is out of range", field, v));
  };
  if (!std::isfinite(lifetime_s) || lifetime_s <= 0) return bad("lifetime_s (T_l)", lifetime_s);
  if (!std::isfinite(hot_threshold) || hot_threshold < 0) return bad("hot_threshold (H_p)", hot_threshold);
  if (!std::isfinite(decay) || decay < 0) return bad("decay (lambda)", decay);
  if (!std::isfinite(read_ratio) || read_ratio < 0) return bad("read_ratio (R_rw)", read_ratio);
  return Status::Ok();
}

HotnessTracker::HotnessTracker(HotnessParams params, const Clock* clock) : params_(params), clock_(clock) {}

namespace {

PageHeat Judge(double hotness, uint64_t reads, uint64_t writes, const HotnessParams& params) {
  PageHeat h{hotness, reads, writes, false, false};
  h.hot = hotness > params.hot_threshold;
  // Cur_r / Cur_w > R_rw, written without the division so a page never
  // written (Cur_w = 0) is read-hot rather than a division by zero.
  h.read_hot = h.hot && static_cast<double>(reads) > params.read_ratio * static_cast<double>(writes);
  return h;
}

}  // namespace

PageHeat HotnessTracker::Record(PageId page, AccessKind kind) {
  const double now = clock_->NowSeconds();
  auto [it, fresh] = pages_.try_emplace(page);
  Counters& c = it->second;
  // Seed 004 section 5.3: dt = now - lastTime; expired (dt > T_l) clears
  // Cur_r and Cur_w; hotness = e^(-lambda dt) (Cur_r + Cur_w) + 1; then the
  // access is counted.
  const double dt = fresh ? 0 : now - c.last_s;
  if (dt > params_.lifetime_s) c.reads = c.writes = 0;
  const double alpha = std::exp(-params_.decay * dt);
  c.hotness = alpha * static_cast<double>(c.reads + c.writes) + 1;
  (kind == AccessKind::kRead ? c.reads : c.writes) += 1;
  c.last_s = now;
  return Judge(c.hotness, c.reads, c.writes, params_);
}

PageHeat HotnessTracker::Peek(PageId page) const {
  auto it = pages_.find(page);
  if (it == pages_.end()) return {};
  const Counters& c = it->second;
  const double dt = clock_->NowSeconds() - c.last_s;
  if (dt > params_.lifetime_s) return {};
  return Judge(c.hotness * std::exp(-params_.decay * dt), c.reads, c.writes, params_);
}

void HotnessTracker::Forget(PageId page) { pages_.erase(page); }

PageHeat SumHeat(std::span<const HotnessTracker* const> trackers, PageId page, const HotnessParams& params) {
  double hotness = 0;
  uint64_t reads = 0, writes = 0;
  for (const HotnessTracker* t : trackers) {
    const PageHeat h = t->Peek(page);
    hotness += h.hotness;
    reads += h.reads;
    writes += h.writes;
  }
  return Judge(hotness, reads, writes, params);
}

}  // namespace pulse::tier
