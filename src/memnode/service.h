// MemNodeService: the traversal part of a memory node, without I/O.  Not to
// be confused with MemNodeServer (memnode_server.h), the `pulse memnode`
// process that owns one of these next to the network, the pool, the
// allocator, the control operations and the RPC baseline.
//
// The memory node's traversal handling: programs arrive in
// traversal messages, are verified and cached by content hash, run on the
// engine, and leave as response messages for the switch.  Requests that
// STORE are executed at most once per request id: a retransmitted duplicate
// gets the cached response (or is dropped while the original runs).  With a
// StoreRecord (set_store_record), that also holds across a restart of the
// node: a request an earlier process ran is answered from the record or
// refused with kOutcomeUnknown, never run again.
//
// Pipelines: with options.pipelines == 1 the engine runs on the calling
// thread inside Poll().  With N > 1 it runs on N pipeline threads
// (memnode/pipeline_threads.h), each with options.engine.workspaces
// workspaces over the one range table; everything else (verification, the
// program cache, duplicate suppression, the StoreRecord, continuations)
// stays on the calling thread, which hands admitted traversals to the
// pipelines and answers the finished ones in Poll().
// Not thread-safe: the memory node's network thread drives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memnode/pipeline_threads.h"
#include "memnode/store_record.h"
#include "pulse/engine.h"
#include "pulse/protocol.h"

namespace pulse {

struct MemNodeServiceOptions {
  EngineOptions engine;
  uint32_t program_cache_entries = 1024;
  // Program hashes remembered as already sent with code, per destination
  // node of continuations (the set is cleared when it reaches this size).
  uint32_t sent_program_entries = 1024;
  uint32_t dedup_entries = 8192;  // responses remembered for STORE-bearing requests
  uint32_t max_queued = 4096;     // requests waiting for a workspace
  // Engine pipelines: 1 runs the engine inside Poll(); N > 1 on N threads.
  uint32_t pipelines = 1;
  // Iterations a pipeline thread runs between looks at what was admitted
  // to it and at a pending range-table change (pipelines > 1).
  uint64_t slice_iterations = 4096;
};

struct MemNodeCounters {
  uint64_t requests = 0;
  uint64_t responses = 0;
  uint64_t iterations = 0;
  uint64_t not_local = 0;
  uint64_t faults = 0;
  uint64_t bad_requests = 0;      // malformed program, wrong kind, queue full
  uint64_t unknown_programs = 0;
  uint64_t duplicates = 0;        // retransmissions answered from the cache or dropped
  uint64_t programs_cached = 0;
  // "Not local" continuations sent on with the program's code, and with its
  // hash only (the destination was sent the code before).
  uint64_t continuations_with_code = 0;
  uint64_t continuations_by_hash = 0;
  // Retransmissions of STORE-bearing requests an earlier process of this
  // node ran (StoreRecord): answered from the record, or refused with
  // kOutcomeUnknown.
  uint64_t durable_answers = 0;
  uint64_t outcome_unknown = 0;
  // Where a traversal's time on this node goes (issue 14's per-leg
  // accounting), summed over the traversals answered: from Handle() to its
  // admission to the engine (waiting for a workspace), and from admission
  // to the answer (the engine's run, with whatever it interleaves).
  uint64_t queue_wait_ns = 0;
  uint64_t engine_ns = 0;
};

class MemNodeService {
 public:
  using SendFn = std::function<void(TraversalMessage&&)>;

  // table must outlive the service; change it only through AddRange and
  // RemoveRange.  With options.pipelines > 1 this starts the pipeline
  // threads (stopped and joined by the destructor).
  MemNodeService(RangeTable* table, const MemNodeServiceOptions& options);
  ~MemNodeService();

  // Adds or removes a range of the translation and protection table (with
  // pipeline threads, while they are parked between slices: no traversal
  // uses a removed range once this returns).  Errors as RangeTable::Add /
  // Remove.
  Status AddRange(const Range& range);
  Status RemoveRange(uint64_t base);

  // Records STORE-bearing visits durably in `record` (owned by the caller,
  // which keeps it alive; nullptr: in memory only).
  void set_store_record(memnode::StoreRecord* record) { record_ = record; }
  // With pipeline threads: `wake` (thread-safe) is called from a pipeline
  // thread when finished traversals wait for Poll(), e.g. the node's
  // Worker::Wake().  Set it before the first Handle().
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }
  // Stops and joins the pipeline threads (traversals they run are dropped
  // unanswered), so that the memory and the wake function they use may go.
  // Afterwards the service may only be destroyed.  No-op with one pipeline.
  void StopPipelines() { threads_.reset(); }

  // Accepts one decoded message.  Errors (bad program, unknown program hash,
  // a scratch pad over the engine's limit, overload) are answered through
  // `send` right away, with no fault location (fault_pc and fault_addr 0:
  // nothing ran); good requests are queued for the engine.
  void Handle(TraversalMessage&& message, const SendFn& send);

  // One pipeline: runs the engine for up to `budget` iterations.  Pipeline
  // threads: admits queued requests to them and takes back what they
  // finished (`budget` is unused; their slices are
  // options.slice_iterations).  Finished traversals are sent.  Returns the
  // iterations of the traversals executed (one pipeline) or answered
  // (threads).
  uint64_t Poll(const SendFn& send, uint64_t budget = 4096);

  // No traversal running or queued.
  bool Idle() const { return active() == 0 && queued() == 0; }
  // Poll() has something to do on the calling thread now: run the engine
  // (one pipeline), or admit a queued request to a pipeline thread with room
  // or answer a traversal one finished.  When false the caller may sleep
  // until a Handle() or the wake function.
  bool NeedsPoll() const;
  // Blocks until NeedsPoll() or `timeout` passed, if a pipeline thread runs
  // a traversal; else (and with one pipeline) returns at once.  For callers
  // without an event loop (tests).
  void WaitForWork(std::chrono::milliseconds timeout);
  // Traversals admitted to the engine and not yet answered.
  uint32_t active() const;
  // Workspaces of the engine (all pipelines), and requests waiting for one.
  uint32_t capacity() const;
  size_t queued() const { return queue_.size() - queue_head_; }
  // Per pipeline: traversals admitted and not yet answered, and served.
  std::vector<memnode::PipelineLoad> pipeline_loads() const;
  const MemNodeCounters& counters() const { return counters_; }

  // Memory node `node` may no longer hold the programs this node sent it
  // (its connection closed, a new one opened, its routing entry changed: a
  // restart loses the program cache): the next continuation to it carries
  // the code again instead of being bounced there as an unknown program.
  void ForgetSentPrograms(int64_t node) { sent_programs_.erase(node); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    TraversalMessage message;  // header fields; scratch moved into the request
    ProgramRef program;
    Clock::time_point arrived;
  };
  struct Running {
    TraversalMessage message;
    Clock::time_point admitted;
  };

  void Reply(TraversalMessage&& m, TraversalStatus status, const SendFn& send);
  // The time for the per-leg accounting (MemNodeCounters::queue_wait_ns,
  // engine_ns), read once and shared until Fresh() is called: the requests
  // one network pass or ring scan hands to Handle() share their arrival
  // time, and an admission right after a Finish() takes the finish's time
  // (a clock read was ~10% of the node's CPU per ring GET at three a
  // request).  Dropped by Poll() (on entry and exit) and by a NeedsPoll()
  // that says no: a stamp never outlives the caller's loop pass.
  Clock::time_point Now() {
    if (!now_valid_) {
      now_ = Clock::now();
      now_valid_ = true;
    }
    return now_;
  }
  void Fresh() { now_valid_ = false; }
  // The program of a request that carries only its hash, or null.  One
  // entry remembers the last hit: a batch of requests mostly runs one
  // program.
  ProgramRef FindProgram(uint64_t hash);
  void Admit();
  Pending& QueueFront() { return queue_[queue_head_]; }
  void PopQueueFront();
  // True if the queue's first request can start now (a workspace that may
  // run it is free).
  bool CanAdmitNext() const;
  // Runs `change` on the range table with no pipeline reading it, then
  // drops the pipelines' cached translations.
  Status ChangeRangeTable(const std::function<Status()>& change);
  // Answers a traversal the engine finished.
  void Finish(TraversalRequest&& req, const TraversalOutcome& out, const SendFn& send);
  // STORE-bearing visits by (request id, iterations on arrival): a traversal
  // that leaves this node and comes back arrives with more iterations and is
  // a new visit, not a duplicate of the first.
  using StoreVisit = std::pair<uint64_t, uint32_t>;
  void Remember(StoreVisit visit, const TraversalMessage& response);
  // Attaches the program's code to a "not local" continuation unless this
  // node already sent it to the continuation's destination node.  A
  // destination that lost it answers kUnknownProgram to the CPU node, which
  // resumes there with the code.
  void AttachProgramIfNeeded(const VerifiedProgram& program, TraversalMessage* m);

  RangeTable* table_;
  MemNodeServiceOptions options_;
  std::unique_ptr<Pipeline> pipeline_;                 // pipelines == 1
  std::unique_ptr<memnode::PipelineThreads> threads_;  // pipelines > 1
  std::function<void()> wake_;
  uint64_t served_ = 0;  // by pipeline_
  std::unordered_map<uint64_t, ProgramRef> programs_;
  ProgramRef last_program_;  // FindProgram's last hit (cleared with programs_)
  std::unordered_map<int64_t, std::unordered_set<uint64_t>> sent_programs_;  // by destination node
  // Requests waiting for a workspace: queue_[queue_head_, size()), a FIFO
  // whose storage is kept (no allocation per request; a std::deque of
  // these allocates a block every three).
  std::vector<Pending> queue_;
  size_t queue_head_ = 0;
  // Admitted traversals, by the id they run under (TraversalRequest::id),
  // which is their index here; free indices in free_running_.  Sized to
  // the engine's capacity: no allocation per request.
  std::vector<Running> running_;
  std::vector<uint32_t> free_running_;
  // Now()'s shared time; NeedsPoll() (const) drops it when it says no, so
  // that the requests of the caller's next pass read the time anew.
  mutable Clock::time_point now_{};
  mutable bool now_valid_ = false;
  std::set<StoreVisit> store_in_flight_;
  std::map<StoreVisit, TraversalMessage> store_done_;
  std::list<StoreVisit> store_done_order_;
  MemNodeCounters counters_;
  memnode::StoreRecord* record_ = nullptr;
};

}  // namespace pulse
