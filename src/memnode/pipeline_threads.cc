// Several engine pipelines of one memory node (pipeline_threads.h).
#include "memnode/pipeline_threads.h"

#include <pthread.h>

#include <string>
#include <thread>

#include <fmt/format.h>

namespace pulse::memnode {

Result<uint32_t> ParsePipelineCount(std::string_view text) {
  uint64_t n = 0;
  bool digits = !text.empty() && text.size() <= 9;
  for (char c : text) {
    if (c < '0' || c > '9') digits = false;
    if (digits) n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!digits || n < 1 || n > kMaxPipelinesPerNode)
    return Status::InvalidArgument(
        fmt::format("expected a whole number of pipelines in [1, {}], got '{}'", kMaxPipelinesPerNode, text));
  return static_cast<uint32_t>(n);
}

struct PipelineThreads::Lane {
  Lane(const RangeTable* table, const EngineOptions& options, uint32_t i) : pipeline(table, options), index(i) {}

  Pipeline pipeline;  // its thread's, and the node thread's while parked
  const uint32_t index;
  std::mutex mu;
  std::condition_variable work_cv;    // its thread waits: something admitted, pause over, stop
  std::condition_variable parked_cv;  // ChangeRangeTable waits: the slice ended
  std::vector<TraversalRequest> inbox;  // guarded by mu
  bool pause = false;                   // guarded by mu
  bool in_slice = false;                // guarded by mu
  bool stop = false;                    // guarded by mu
  // inbox is not empty: lets a running slice look without the lock.
  std::atomic<bool> has_inbox{false};
  uint32_t assigned = 0;  // node thread only: admitted, not yet drained
  uint64_t served = 0;    // node thread only
  // The pipeline's prefetch counters, copied by its thread at each
  // completion and slice end so that stats can read them without touching
  // the pipeline.
  std::atomic<uint64_t> prefetches_issued{0};
  std::atomic<uint64_t> prefetches_ignored{0};
  std::thread thread;
};

PipelineThreads::PipelineThreads(const RangeTable* table, const EngineOptions& options, uint32_t count,
                                 uint64_t slice_iterations, std::function<void()> wake)
    : workspaces_(options.workspaces == 0 ? 1 : options.workspaces),
      slice_iterations_(slice_iterations == 0 ? 1 : slice_iterations),
      wake_(std::move(wake)) {
  for (uint32_t i = 0; i < (count == 0 ? 1 : count); ++i) lanes_.push_back(std::make_unique<Lane>(table, options, i));
  for (auto& lane : lanes_) {
    Lane* l = lane.get();
    l->thread = std::thread([this, l] { Serve(*l); });
    // Shown by top -H and perf; at most 15 characters.
    (void)pthread_setname_np(l->thread.native_handle(), fmt::format("pulse-pipe-{}", l->index).c_str());
  }
}

PipelineThreads::~PipelineThreads() {
  for (auto& lane : lanes_) {
    {
      std::lock_guard<std::mutex> lock(lane->mu);
      lane->stop = true;
    }
    lane->work_cv.notify_one();
  }
  for (auto& lane : lanes_) lane->thread.join();
}

void PipelineThreads::Serve(Lane& lane) {
  std::vector<TraversalRequest> taken;
  auto take = [&] {
    std::lock_guard<std::mutex> lock(lane.mu);
    taken.swap(lane.inbox);
    lane.has_inbox.store(false, std::memory_order_relaxed);
  };
  // The node admits to a lane only while it has a free workspace (Admit),
  // so everything taken fits.
  auto admit = [&] {
    for (TraversalRequest& r : taken) lane.pipeline.Admit(std::move(r));
    taken.clear();
  };
  auto copy_counters = [&] {
    lane.prefetches_issued.store(lane.pipeline.prefetches_issued(), std::memory_order_relaxed);
    lane.prefetches_ignored.store(lane.pipeline.prefetches_ignored(), std::memory_order_relaxed);
  };
  // A finished traversal goes back at once; what was admitted meanwhile
  // starts in the workspace it freed, without waiting for the slice to end.
  const CompletionFn done = [&](TraversalRequest&& request, const TraversalOutcome& outcome) {
    // Before Publish: whoever drains this traversal sees its hints counted.
    copy_counters();
    Publish(Finished{std::move(request), outcome, lane.index});
    if (lane.has_inbox.load(std::memory_order_acquire)) {
      take();
      admit();
    }
  };
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(lane.mu);
      lane.in_slice = false;
      if (lane.pause) lane.parked_cv.notify_all();
      // No work: block at once (no polling; docs/engine.md).
      lane.work_cv.wait(lock, [&] {
        return lane.stop || (!lane.pause && (!lane.inbox.empty() || lane.pipeline.active() > 0));
      });
      if (lane.stop) return;
      lane.in_slice = true;
      taken.swap(lane.inbox);
      lane.has_inbox.store(false, std::memory_order_relaxed);
    }
    admit();
    lane.pipeline.Run(done, slice_iterations_);
    copy_counters();
  }
}

void PipelineThreads::Publish(Finished&& f) {
  bool was_empty = false;
  {
    std::lock_guard<std::mutex> lock(finished_mu_);
    was_empty = finished_.empty();
    finished_.push_back(std::move(f));
    has_finished_.store(true, std::memory_order_release);
  }
  // One wake-up per batch: the node drains the whole queue at once.
  if (was_empty) {
    finished_cv_.notify_all();
    if (wake_) wake_();
  }
}

namespace {
bool Stores(const TraversalRequest& request) { return request.program && request.program->info().has_store; }
}  // namespace

bool PipelineThreads::HasFreeWorkspace() const { return active_ < capacity(); }

bool PipelineThreads::HasFreeWorkspaceFor(bool stores) const {
  return stores ? lanes_[0]->assigned < workspaces_ : HasFreeWorkspace();
}

void PipelineThreads::Admit(TraversalRequest&& request) {
  Lane* best = nullptr;
  if (Stores(request)) {
    best = lanes_[0].get();  // the writer lane (pipeline_threads.h)
  } else {
    for (auto& lane : lanes_) {
      if (lane->assigned < workspaces_ && (best == nullptr || lane->assigned < best->assigned)) best = lane.get();
    }
  }
  ++best->assigned;
  ++active_;
  {
    std::lock_guard<std::mutex> lock(best->mu);
    best->inbox.push_back(std::move(request));
    best->has_inbox.store(true, std::memory_order_release);
  }
  best->work_cv.notify_one();
}

uint64_t PipelineThreads::Drain(const CompletionFn& done) {
  std::vector<Finished> batch;
  {
    std::lock_guard<std::mutex> lock(finished_mu_);
    batch.swap(finished_);
    has_finished_.store(false, std::memory_order_release);
  }
  uint64_t iterations = 0;
  for (Finished& f : batch) {
    Lane& lane = *lanes_[f.lane];
    --lane.assigned;
    ++lane.served;
    --active_;
    iterations += f.outcome.iterations;
    done(std::move(f.request), f.outcome);
  }
  return iterations;
}

bool PipelineThreads::WaitForFinished(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(finished_mu_);
  return finished_cv_.wait_for(lock, timeout, [&] { return !finished_.empty(); });
}

void PipelineThreads::ChangeRangeTable(const std::function<void()>& change) {
  // A slice is bounded (slice_iterations), so each wait is short.
  for (auto& lane : lanes_) {
    std::unique_lock<std::mutex> lock(lane->mu);
    lane->pause = true;
    lane->parked_cv.wait(lock, [&] { return !lane->in_slice; });
  }
  change();
  for (auto& lane : lanes_) {
    // Parked: its thread waits on work_cv and touches nothing.
    std::lock_guard<std::mutex> lock(lane->mu);
    lane->pipeline.OnRangeTableChanged();
    lane->pause = false;
  }
  for (auto& lane : lanes_) lane->work_cv.notify_one();
}

std::vector<PipelineLoad> PipelineThreads::loads() const {
  std::vector<PipelineLoad> out;
  for (const auto& lane : lanes_)
    out.push_back(PipelineLoad{lane->assigned, lane->served,
                               lane->prefetches_issued.load(std::memory_order_relaxed),
                               lane->prefetches_ignored.load(std::memory_order_relaxed)});
  return out;
}

}  // namespace pulse::memnode
