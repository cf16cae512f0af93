// The offload agent's logic (seed 003 III-B, IV-C), without I/O: host page
// requests in, operations on far memory out (through a Forwarder), replies
// out through a callback.  `pulse agent` (agent_server.h) drives it from its
// request thread; the tests drive it with a model Forwarder.
//
// What it does with a host's requests:
//   regions     CreateRegion reserves a region as chunks of chunk_bytes
//               (Allocate ops: the client's allocator spreads them over the
//               memory nodes) and fills each (Preload ops: a file at the
//               memory node, or zeros).  A name is one region per agent:
//               opening it again is allowed only when the region and the
//               new opener are both read-only (read-only sharing); a second
//               writer is refused (FailedPrecondition naming the region).
//               A host that disconnects closes what it opened.
//   aggregation requests that are queued together (arrived in one burst, or
//               while the forwarding window was full) become one batch:
//               overlapping and adjacent reads merge into one operation, and
//               so do write-backs (applied in arrival order), up to
//               max_op_bytes and never across a chunk.  Off: one operation
//               per request.
//   forwarding  asynchronous: up to max_in_flight operations outstanding;
//               off: one at a time (the proxy).
//   static cache a region marked read-only that fits the static budget is
//               loaded once (class static load, in the background) and then
//               served from the agent; every page served counts a hit.
//   dynamic cache for the other regions: entries of entry_bytes (16 pages),
//               evicted at random among those no recent page is in (the
//               last 32), looked up per page; a miss is fetched on demand
//               (just the pages asked for) and recorded in the recent list,
//               from which the prefetcher loads, in the background (class
//               prefetch), the entry of a missed page and, when a page
//               continues a forward scan, the prefetch_entries entries after
//               its own
//               (has_work() is true while the list has unread pages, so
//               hits alone keep it going).  The adaptive switch turns the
//               cache off when a window's hit rate falls below the
//               threshold (and back on when the recent list predicts, for a
//               cache of this capacity, that it would pass).
// Single-threaded: every call on one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/adaptive_switch.h"
#include "agent/dynamic_cache.h"
#include "agent/recent_list.h"
#include "farmem/agent_wire.h"

namespace pulse::agent {

using farmem::AgentReply;
using farmem::AgentRequest;
using farmem::PageClass;

struct AgentOptions {
  // Optimisations (all off: the proxy).
  bool aggregation = true;
  bool async_forwarding = true;
  bool static_cache = true;
  bool dynamic_cache = true;
  bool prefetch = true;  // with dynamic_cache: background loads from the recent list
  bool adaptive = true;  // with dynamic_cache: the hit-rate switch
  // Budgets.
  uint32_t max_in_flight = 64;              // operations outstanding (async forwarding)
  uint64_t max_op_bytes = 1 << 20;          // largest merged operation
  uint64_t static_cache_bytes = 256ull << 20;
  uint64_t dynamic_cache_bytes = 256ull << 20;
  uint64_t entry_bytes = 1 << 20;           // dynamic cache entry (16 pages of 64 KB)
  uint32_t recent_pages = 128;
  uint32_t prefetch_entries = 1;            // entries after a requested page's entry
  uint32_t max_prefetch_in_flight = 8;
  double hit_rate_threshold = 0.5;          // Eq. 3 (HitRateThreshold)
  uint32_t adaptive_window = 128;           // page lookups per decision (the recent list's length: CC's
                                            // sparse rounds, ~400 lookups on rmat-18, fit several)
  uint64_t chunk_bytes = 16ull << 20;       // region reservation unit (a multiple of entry_bytes)
  uint64_t seed = 1;                        // random eviction
};

// Validates the options.  Errors: InvalidArgument naming the field.
Status ValidateAgentOptions(const AgentOptions& options);

// The proxy: every optimisation off.
AgentOptions ProxyAgentOptions(AgentOptions base);

// One operation on far memory.
struct ForwardOp {
  enum class Kind : uint8_t { kRead, kWrite, kAllocate, kPreload, kFree };
  uint64_t tag = 0;
  Kind kind = Kind::kRead;
  uint64_t addr = 0;   // far address (all but kAllocate)
  uint64_t bytes = 0;  // kRead, kAllocate, kPreload (kWrite: data.size())
  PageClass cls = PageClass::kOnDemand;
  std::vector<uint8_t> data;  // kWrite
  std::string file;           // kPreload ("" : zeros)
  uint64_t file_offset = 0;   // kPreload
};

// Its outcome: kRead data; kAllocate the far address in `value`.  A
// forwarder that runs on a thread of its own stamps when that thread took
// the operation and when its last completion ran there (both unset: not
// stamped), so that the core can split a memory operation's time into the
// hand-off to that thread, the memory node's part and the hand-off back.
struct ForwardResult {
  uint64_t tag = 0;
  Status status;
  uint64_t value = 0;
  std::vector<uint8_t> data;
  std::chrono::steady_clock::time_point taken{};
  std::chrono::steady_clock::time_point completed{};
};

// Carries operations to far memory.  Submit never completes anything inside
// the call: results come back through AgentCore::OnResult.
class Forwarder {
 public:
  virtual ~Forwarder() = default;
  virtual void Submit(std::vector<ForwardOp> ops) = 0;
};

// Counters (pages are the host's pages; bytes are bytes).
struct AgentCounters {
  uint64_t host_requests = 0;
  uint64_t host_read_requests = 0;
  uint64_t host_write_requests = 0;
  uint64_t host_pages_read = 0;
  uint64_t host_pages_written = 0;
  uint64_t host_errors = 0;
  uint64_t batches = 0;                // aggregation rounds that produced operations
  uint64_t forwarded_requests = 0;     // host reads/writes (parts) that went to far memory
  uint64_t memory_ops = 0;             // read/write operations sent to far memory
  uint64_t memory_ops_by_class[4] = {};
  uint64_t memory_bytes_by_class[4] = {};
  uint64_t max_in_flight_seen = 0;
  uint64_t static_hits = 0;            // pages served from the static cache
  uint64_t static_misses = 0;          // pages of static-cacheable regions read before their load ended
  uint64_t static_regions = 0;
  uint64_t static_bytes = 0;
  uint64_t dynamic_hits = 0;           // pages found in the dynamic cache (ready or filling), while it is on
  uint64_t dynamic_misses = 0;
  // Pages looked up while the adaptive switch had the cache off (read on
  // demand, counted neither hit nor miss): with the two above, every lookup.
  uint64_t dynamic_lookups_off = 0;
  // Where the dynamic hits and misses come from (diagnostics; pages):
  uint64_t dynamic_hits_filling = 0;    // hits on an entry still being filled (the page waits for it)
  uint64_t dynamic_misses_evicted = 0;  // misses on an entry the cache held and evicted
  // The same over regions marked read-only but not static-cached (a graph's
  // CSR arrays: its edge data).
  uint64_t dynamic_hits_read_only = 0;
  uint64_t dynamic_misses_read_only = 0;
  uint64_t prefetches = 0;             // entries prefetched
  uint64_t prefetch_skipped = 0;       // candidates not cached for want of an unpinned entry
  uint64_t fill_failures = 0;
  // Time (steady clock, microseconds summed): a host read from its arrival to
  // its reply (the agent's share of a fault: queueing, cache waits and the
  // memory operations), and each memory read/write from issue to result.
  uint64_t read_request_micros = 0;    // over host_read_requests answered
  uint64_t read_requests_timed = 0;
  uint64_t memory_op_micros_by_class[4] = {};
  // The same reads and writes split at the forwarding thread (stamped
  // results only): issue -> taken by that thread, taken -> its completion
  // (posting, the per-node window, the memory node's round trip), and
  // completion -> back here.
  uint64_t forward_timed = 0;
  uint64_t forward_handoff_micros = 0;
  uint64_t forward_node_micros = 0;
  uint64_t forward_return_micros = 0;
};

namespace core_detail {

// A host request waiting for operations or cache fills.
struct Pending {
  uint64_t host = 0;
  uint64_t request_id = 0;
  farmem::AgentOp op = farmem::AgentOp::kStats;
  uint64_t region = 0;
  uint32_t outstanding = 1;  // parts not yet done (+1 while being set up)
  Status status;             // the first failure
  std::vector<uint8_t> data; // a read's reply
  uint64_t value = 0;
  std::chrono::steady_clock::time_point arrived;
  uint64_t arrived_ns = 0;  // the same on the clock of farmem::AgentStamps
};

// Where a read operation's bytes go: `length` bytes at `src_offset` of the
// operation to byte `dst_offset` of pending request `pending`.
struct Delivery {
  uint64_t pending = 0;
  uint64_t dst_offset = 0;
  uint64_t src_offset = 0;
  uint64_t length = 0;
};

// An operation on far memory and what its result is for.
struct Op {
  enum class Purpose : uint8_t { kHostRead, kHostWrite, kFill, kStaticLoad, kAllocate, kPreload, kFree };
  Purpose purpose = Purpose::kHostRead;
  ForwardOp op;
  uint64_t region = 0;
  uint64_t offset = 0;              // in the region (reads, writes, fills, static loads)
  uint32_t chunk = 0;               // kAllocate, kPreload
  std::vector<Delivery> deliveries; // kHostRead
  std::vector<uint64_t> acks;       // kHostWrite, kAllocate, kPreload, kFree: pending requests
  uint64_t parts = 0;               // host request parts this operation carries
  std::chrono::steady_clock::time_point issued;
};

struct QueuedRead {
  uint64_t region = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t pending = 0;
  uint64_t dst_offset = 0;
  PageClass cls = PageClass::kOnDemand;  // the host's: its own prefetch or on demand
};

struct QueuedWrite {
  uint64_t region = 0;
  uint64_t offset = 0;
  std::vector<uint8_t> data;
  uint64_t pending = 0;
  uint64_t seq = 0;  // arrival order (overlapping writes apply in it)
};

}  // namespace core_detail

class AgentCore {
 public:
  using ReplyFn = std::function<void(uint64_t host, AgentReply reply)>;

  // `forwarder` must outlive the core.  Options must be valid.
  AgentCore(const AgentOptions& options, Forwarder* forwarder, ReplyFn reply);
  ~AgentCore();

  // A host's request (host: the caller's connection id).  Replies may be
  // sent inside the call (errors, cache hits) or later.
  void OnRequest(uint64_t host, AgentRequest request);
  // The host's connection is gone: its replies are dropped and its regions
  // closed.
  void OnHostGone(uint64_t host);
  // An operation finished.
  void OnResult(ForwardResult result);
  // Turns queued work into operations (one batch), within the window.
  void Flush();
  // Whether Flush has something to do now: queued operations the window
  // admits, or recent pages the prefetcher may read (false once it has
  // read them or its fills are at their limit: nothing spins).
  bool has_work() const;

  const AgentCounters& counters() const { return counters_; }
  const AgentOptions& options() const { return options_; }
  bool dynamic_on() const { return switch_.on(); }
  const AdaptiveSwitch& adaptive_switch() const { return switch_; }
  const DynamicCache& dynamic_cache() const { return cache_; }
  size_t in_flight() const { return in_flight_; }
  // The counters as JSON (the agent's "stats").
  nlohmann::json Stats() const;

  struct Region;
  using Pending = core_detail::Pending;
  using Op = core_detail::Op;

 private:
  // Request handlers.
  void CreateRegion(uint64_t host, AgentRequest& q);
  void ReadPages(uint64_t host, AgentRequest& q);
  void WritePages(uint64_t host, AgentRequest& q);
  void MarkReadOnly(uint64_t host, AgentRequest& q);
  void DestroyRegion(uint64_t host, AgentRequest& q);
  void CloseRegion(uint64_t host, Region& r);
  void FreeRegion(Region& r);

  // Pending host requests.
  uint64_t NewPending(uint64_t host, const AgentRequest& q, uint64_t reply_bytes);
  void Finish(uint64_t pending, Status status = Status::Ok(), uint64_t value = 0);
  // `received_ns`: the request's arrival (AgentStamps::received_ns; 0: not
  // stamped).
  void Reply(uint64_t host, uint64_t request_id, Status status, uint64_t value = 0, std::vector<uint8_t> data = {},
             uint64_t received_ns = 0);
  void Deliver(uint64_t pending, uint64_t dst_offset, const uint8_t* src, uint64_t length);
  void PartDone(uint64_t pending, const Status& status);

  // Far addresses.
  Region* FindRegion(uint64_t id);
  uint64_t FarAddress(const Region& r, uint64_t offset) const;

  // Operations.
  void Enqueue(Op op, bool background);
  void BuildBatch();
  void Issue();
  void Prefetch();
  void PatchWithQueuedWrites(uint64_t region, uint64_t entry);
  void StartStaticLoad(Region& r);
  void OnRead(Op& op, ForwardResult& result);
  void QueueRead(uint64_t region, uint64_t offset, uint64_t length, uint64_t pending, uint64_t dst_offset,
                 PageClass cls);
  Result<Region*> PagesOf(const AgentRequest& q);
  bool DynamicApplies(const Region& r) const;
  bool PredictHit(uint64_t region, uint64_t entry) const;
  bool InUse(const CacheKey& key) const;
  bool ContinuesStream(uint64_t region, uint64_t offset) const;
  size_t window() const;
  uint64_t PrefetchLimit() const;  // fills in flight at most

  AgentOptions options_;
  Forwarder* forwarder_;
  ReplyFn reply_;
  AgentCounters counters_;
  DynamicCache cache_;
  RecentList recent_;
  AdaptiveSwitch switch_;

  std::map<uint64_t, std::unique_ptr<Region>> regions_;
  std::map<std::string, uint64_t> names_;
  uint64_t next_region_ = 1;
  std::unordered_map<uint64_t, Pending> pending_;
  uint64_t next_pending_ = 1;
  std::unordered_map<uint64_t, Op> ops_;  // issued, by tag
  uint64_t next_tag_ = 1;
  std::deque<Op> queue_;       // built, waiting for the window (on-demand first)
  std::deque<Op> background_;  // static loads and prefetches
  std::vector<core_detail::QueuedRead> reads_;    // waiting for the next batch
  std::vector<core_detail::QueuedWrite> writes_;
  uint64_t next_seq_ = 0;
  size_t in_flight_ = 0;
  size_t prefetch_in_flight_ = 0;
  uint64_t static_used_ = 0;
};

}  // namespace pulse::agent
