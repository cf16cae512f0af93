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
// Not thread-safe: the memory node's network thread drives it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

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
};

class MemNodeService {
 public:
  using SendFn = std::function<void(TraversalMessage&&)>;

  // table must outlive the service; change it only through AddRange and
  // RemoveRange.
  MemNodeService(RangeTable* table, const MemNodeServiceOptions& options);

  // Adds or removes a range of the translation and protection table.
  // Errors as RangeTable::Add / Remove.
  Status AddRange(const Range& range);
  Status RemoveRange(uint64_t base);

  // Records STORE-bearing visits durably in `record` (owned by the caller,
  // which keeps it alive; nullptr: in memory only).
  void set_store_record(memnode::StoreRecord* record) { record_ = record; }

  // Accepts one decoded message.  Errors (bad program, unknown program hash,
  // overload) are answered through `send` right away; good requests are
  // queued for the engine.
  void Handle(TraversalMessage&& message, const SendFn& send);

  // Runs the engine for up to `budget` iterations; finished traversals are
  // sent.  Returns iterations executed.
  uint64_t Poll(const SendFn& send, uint64_t budget = 4096);

  // No traversal running or queued.
  bool Idle() const { return pipeline_.active() == 0 && queue_.empty(); }
  uint32_t active() const { return pipeline_.active(); }
  // Workspaces of the engine, and requests waiting for one.
  uint32_t capacity() const { return pipeline_.capacity(); }
  size_t queued() const { return queue_.size(); }
  const MemNodeCounters& counters() const { return counters_; }

 private:
  struct Pending {
    TraversalMessage message;  // header fields; scratch moved into the request
    ProgramRef program;
  };

  void Reply(TraversalMessage&& m, TraversalStatus status, const SendFn& send);
  void Admit();
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
  Pipeline pipeline_;
  std::unordered_map<uint64_t, ProgramRef> programs_;
  std::unordered_map<int64_t, std::unordered_set<uint64_t>> sent_programs_;  // by destination node
  std::deque<Pending> queue_;
  std::unordered_map<uint64_t, TraversalMessage> running_;  // by workspace request id
  uint64_t next_local_id_ = 1;
  std::set<StoreVisit> store_in_flight_;
  std::map<StoreVisit, TraversalMessage> store_done_;
  std::list<StoreVisit> store_done_order_;
  MemNodeCounters counters_;
  memnode::StoreRecord* record_ = nullptr;
};

}  // namespace pulse
