// PipelineThreads: several engine pipelines of one memory node, each on a
// thread of its own with its own workspaces, all over the node's one range
// table (`pulse memnode --pipelines N`, N >= 2; docs/engine.md).
//
// The node's thread keeps everything else: it receives, decodes, verifies,
// suppresses duplicates and admits (Admit), and it takes finished
// traversals back (Drain) to answer them.  A pipeline thread only runs the
// engine: it takes what was admitted to it, runs scheduler slices of at
// most `slice_iterations` iterations, and hands each finished traversal
// back through one queue, calling `wake` when that queue turns non-empty
// (the node passes its Worker's Wake(), so a node asleep on the network
// wakes up to send the answer).
//
// Nothing spins: a pipeline thread with no traversal and nothing admitted
// blocks on its condition variable at once (no polling window).
//
// Programs that STORE all run on pipeline 0, the writer lane.  One
// pipeline runs one iteration at a time, and the node's structures rely on
// that: an iteration's check-then-write (a KV PUT claiming a free slot, a
// list insert) is atomic among writers only if no other thread runs a
// STORE-bearing iteration meanwhile.  Read-only traversals go to the least
// loaded pipeline.
//
// The range table is read by every pipeline thread while it runs; it may
// change only through ChangeRangeTable, which parks every pipeline thread
// between two slices first, so no thread reads the table while it changes
// and none keeps a translation of a removed range.
//
// Thread-safety: every member function is for the one thread that owns the
// object (the node's thread), except that `wake` and the pipeline threads
// run concurrently with it.  The destructor stops and joins the threads;
// traversals still running are dropped unanswered.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "pulse/engine.h"
#include "pulse/status.h"

namespace pulse::memnode {

// A pipeline count as written on a command line or in the environment: a
// whole number in [1, kMaxPipelinesPerNode].  InvalidArgument otherwise, saying
// what was expected and what was given.
Result<uint32_t> ParsePipelineCount(std::string_view text);

// One pipeline's load, for `stats`.
struct PipelineLoad {
  uint32_t active = 0;  // admitted to it and not yet drained
  uint64_t served = 0;  // traversals it finished (drained)
  // PREFETCH hints its engine acted on and ignored (Pipeline::prefetches_*),
  // as of its last completion or slice end.
  uint64_t prefetches_issued = 0;
  uint64_t prefetches_ignored = 0;
};

class PipelineThreads {
 public:
  // Starts `count` (>= 1) threads, each with a Pipeline of `options` over
  // `table` (which must outlive this object).  `wake` must be thread-safe;
  // it is called from pipeline threads.
  PipelineThreads(const RangeTable* table, const EngineOptions& options, uint32_t count,
                  uint64_t slice_iterations, std::function<void()> wake);
  ~PipelineThreads();
  PipelineThreads(const PipelineThreads&) = delete;
  PipelineThreads& operator=(const PipelineThreads&) = delete;

  // True if a pipeline that may run a program that does (`stores`) or does
  // not STORE has a workspace no admitted traversal holds: pipeline 0 for
  // one that STOREs, any otherwise.
  bool HasFreeWorkspaceFor(bool stores) const;
  // True if some pipeline has a free workspace.
  bool HasFreeWorkspace() const;
  // Hands `request` to pipeline 0 if its program STOREs, else to the least
  // loaded pipeline.  Requires HasFreeWorkspaceFor(its program's has_store).
  void Admit(TraversalRequest&& request);
  // True if finished traversals wait for Drain().  Any thread.
  bool HasFinished() const { return has_finished_.load(std::memory_order_acquire); }
  // Calls `done` on this thread for every finished traversal, in the order
  // they finished.  `done` may call Admit().  Returns the iterations they
  // executed on this node.
  uint64_t Drain(const CompletionFn& done);
  // Blocks until a finished traversal waits for Drain() or `timeout` passed;
  // returns HasFinished().  For callers without an event loop (tests).
  bool WaitForFinished(std::chrono::milliseconds timeout);

  // Parks every pipeline thread between two slices, runs `change` (which
  // may modify the range table), drops every pipeline's cached translation
  // and lets them run again.
  void ChangeRangeTable(const std::function<void()>& change);

  uint32_t count() const { return static_cast<uint32_t>(lanes_.size()); }
  // Traversals admitted and not yet drained, and workspaces, over all pipelines.
  uint32_t active() const { return active_; }
  uint32_t capacity() const { return count() * workspaces_; }
  std::vector<PipelineLoad> loads() const;

 private:
  struct Lane;
  struct Finished {
    TraversalRequest request;
    TraversalOutcome outcome;
    uint32_t lane = 0;
  };
  void Serve(Lane& lane);
  void Publish(Finished&& f);

  const uint32_t workspaces_;
  const uint64_t slice_iterations_;
  const std::function<void()> wake_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  uint32_t active_ = 0;  // node thread only

  mutable std::mutex finished_mu_;
  std::condition_variable finished_cv_;
  std::vector<Finished> finished_;  // guarded by finished_mu_
  std::atomic<bool> has_finished_{false};
};

}  // namespace pulse::memnode
