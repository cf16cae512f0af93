// pulse::graph::Workers: the threads a graph computation runs on.  The
// framework's loops (edge map, vertex map, the applications' array sweeps)
// split their index range into chunks that the calling thread and
// `threads - 1` helper threads take in turn.  Idle helpers block on a
// condition variable (nothing spins).
//
// Thread-safety: ParallelFor is called by one thread at a time (the owner);
// the body runs concurrently on every worker and must synchronise its own
// shared writes (std::atomic_ref on the arrays).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pulse::graph {

class Workers {
 public:
  // `threads` >= 1 (0 is taken as 1): the caller plus threads-1 helpers.
  explicit Workers(uint32_t threads = 2);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  uint32_t threads() const { return threads_; }

  // Calls body(lo, hi, worker) for consecutive chunks [lo, hi) of at most
  // `grain` indices covering [begin, end), each chunk exactly once, `worker`
  // in [0, threads()).  Returns when every chunk is done.
  void ParallelFor(uint64_t begin, uint64_t end, uint64_t grain,
                   const std::function<void(uint64_t lo, uint64_t hi, uint32_t worker)>& body);

 private:
  void HelperLoop(uint32_t worker);
  void RunChunks(uint32_t worker);

  uint32_t threads_;
  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // helpers wait for a new job
  std::condition_variable done_cv_;  // the owner waits for helpers to finish
  uint64_t job_generation_ = 0;
  uint32_t helpers_busy_ = 0;
  bool stop_ = false;
  // The current job (valid while a ParallelFor runs).
  const std::function<void(uint64_t, uint64_t, uint32_t)>* body_ = nullptr;
  uint64_t begin_ = 0, end_ = 0, grain_ = 1;
  std::atomic<uint64_t> next_{0};
};

}  // namespace pulse::graph
