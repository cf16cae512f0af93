#include "pulse/graph/workers.h"

#include <algorithm>

namespace pulse::graph {

Workers::Workers(uint32_t threads) : threads_(std::max<uint32_t>(threads, 1)) {
  for (uint32_t w = 1; w < threads_; ++w) helpers_.emplace_back([this, w] { HelperLoop(w); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : helpers_) t.join();
}

void Workers::RunChunks(uint32_t worker) {
  for (;;) {
    uint64_t lo = next_.fetch_add(grain_, std::memory_order_relaxed);
    if (lo >= end_) return;
    (*body_)(lo, std::min(end_, lo + grain_), worker);
  }
}

void Workers::HelperLoop(uint32_t worker) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || job_generation_ != seen; });
      if (stop_) return;
      seen = job_generation_;
    }
    RunChunks(worker);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--helpers_busy_ == 0) done_cv_.notify_one();
    }
  }
}

void Workers::ParallelFor(uint64_t begin, uint64_t end, uint64_t grain,
                          const std::function<void(uint64_t, uint64_t, uint32_t)>& body) {
  if (begin >= end) return;
  grain = std::max<uint64_t>(grain, 1);
  // Small ranges (or one thread) run inline: waking helpers costs more.
  if (helpers_.empty() || end - begin <= grain) {
    for (uint64_t lo = begin; lo < end; lo += grain) body(lo, std::min(end, lo + grain), 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    body_ = &body;
    begin_ = begin;
    end_ = end;
    grain_ = grain;
    next_.store(begin, std::memory_order_relaxed);
    helpers_busy_ = static_cast<uint32_t>(helpers_.size());
    ++job_generation_;
  }
  work_cv_.notify_all();
  RunChunks(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return helpers_busy_ == 0; });
  body_ = nullptr;
}

}  // namespace pulse::graph
