// The CPU-node client: connects to a pulse cluster, allocates far memory,
// reads and writes it, and runs traversals — offloaded to the memory nodes
// through the switch, or executed here over one-sided reads (the dispatch
// engine's choice, seed 000 4.1).
//
// Thread-safety: a Client is not thread-safe.  One thread uses it; all
// network progress happens inside its calls (synchronous calls drive the
// fabric until they finish; asynchronous traversals complete inside Poll(),
// WaitAll() or any synchronous call).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pulse/message_batch.h"
#include "pulse/net.h"
#include "pulse/program.h"
#include "pulse/status.h"
#include "pulse/tier/hotness.h"
#include "pulse/traversal.h"

namespace pulse {

// Where Allocate() places objects.
enum class AllocationPolicy {
  kUniform,      // spread over the memory nodes: object after object, round robin
  kPartitioned,  // on the node the caller names (Allocate's `node`)
  kLocalFirst,   // fill the first memory node, then the next
};

// Where Traverse() runs a program.
enum class ExecutionMode {
  kAuto,     // offload iff t_i * N < eta * t_d (see DispatchPolicy)
  kOffload,  // always on the memory nodes
  kCpuNode,  // always here, one remote read of the window per iteration
};

// The dispatch engine's offload rule (000 4.1 "Bounding complexity").
struct DispatchPolicy {
  ExecutionMode mode = ExecutionMode::kAuto;
  double eta = 4.0;           // accelerator-specific threshold
  // Engine time per instruction and per window load.  Connect() replaces
  // these with the figures the memory nodes measured at start-up
  // (CalibrateEngine) unless use_cluster_calibration is false.
  double t_i_ns = 1.0;
  double t_d_ns = 100.0;
  bool use_cluster_calibration = true;
  // True if a program whose longest path is N instructions is offloaded.
  bool ShouldOffload(uint32_t longest_path) const;
};

// The CPU-node cache (AIFM-like, transparent): far memory kept here in
// aligned blocks within `bytes`.  What populates it: Client::Read and
// Client::Write (write-allocate in write-back mode) and the windows of
// traversals executed at the CPU node (so a structure's own reads, e.g. a
// B+tree's descent in Insert or BTree::WarmCache, fill it).  Windows of
// offloaded traversals do not: a traversal the dispatch engine offloads is
// run here over cached windows until its first uncached one and offloaded
// from there (cur_ptr and the scratch pad are the whole state between
// iterations).  Dirty blocks are written back before any traversal is
// offloaded (only the bytes written, so data of others sharing a block is
// not overwritten with stale bytes); an offloaded traversal that STOREs
// drops the cache when it ends.  The cache is per Client and not coherent with other CPU nodes:
// pulse::ds::FarLock flushes it on release and drops it on acquire.
enum class CacheGranularity {
  kObject,  // object_bytes blocks: one traversal window
  kPage,    // page_bytes blocks (the Fastswap-like cache baseline)
};
enum class CacheEviction { kLru, kClock };
enum class CacheWritePolicy { kWriteBack, kWriteThrough };
struct CacheOptions {
  uint64_t bytes = 0;  // budget; 0: no cache
  CacheGranularity granularity = CacheGranularity::kObject;
  uint32_t object_bytes = 256;   // powers of two
  uint32_t page_bytes = 4096;
  CacheEviction eviction = CacheEviction::kLru;
  CacheWritePolicy write = CacheWritePolicy::kWriteBack;
};

// The write buffer and page cache under locks (seed 004 section 5.4;
// docs/tier.md "Write buffer and page cache under locks"), used while this
// client holds a pulse::ds::FarLock (Client::EnterLock).  Both work on the
// accesses that cross the fabric (not those the rack tier serves by loads
// and stores), and both are off when ClientOptions::cache is on (that cache
// already keeps writes and reads under a lock).
struct LockTierOptions {
  // Under an exclusive hold, writes shorter than write_threshold_bytes are
  // kept in a buffer and written out in batches: when write_buffer_bytes
  // are buffered (posted without waiting), and all of it, waited for,
  // before the hold is released.  Reads under the hold see them.
  bool write_buffer = true;
  uint32_t write_threshold_bytes = 256;
  uint64_t write_buffer_bytes = 64ull << 20;  // seed 004: 64 MB buffers
  // Under shared holds (and no exclusive one), blocks of cache_page_bytes
  // that are read-hot by ClientOptions::hotness (at this client) are cached
  // read-only, LRU, at most cache_pages of them; every write and every
  // release drops them, as does acquiring a hold.
  bool page_cache = true;
  uint32_t cache_pages = 50;        // seed 004
  uint32_t cache_page_bytes = 4096;  // a power of two >= 8 (seed 004's pages are 2 MB: see docs/tier.md)
};

// See ClientOptions::request_path.
enum class RequestPath { kAuto, kRing, kMessages };
// See ClientOptions::ring_layout.
enum class RingLayout { kSlots, kDoubleLayer };

struct ClientOptions {
  std::string switch_address = "127.0.0.1:7100";
  TenantId tenant = 1;
  // How the client proves `tenant` when it connects (docs/security.md): the
  // tenant's credential, as bytes (`credential`) or as the key file `pulse
  // cluster up` wrote for it (`credential_file`, e.g.
  // run/local/tenant-1.key).  Both empty: the key is derived from the
  // cluster secret in worker.credentials or, if that is unset, in the file
  // $PULSE_CLUSTER_SECRET_FILE names (a tool run by the cluster's
  // administrator; the test rack sets it); with neither the client connects
  // without credentials, which a cluster with a secret refuses
  // (PermissionDenied).  The nodes take the tenant from this proof, not from
  // requests.
  std::vector<uint8_t> credential;
  std::string credential_file;
  std::chrono::milliseconds connect_timeout{5000};
  // A traversal attempt that gets no answer in this time is sent again, up
  // to max_attempts in all; then the caller gets Status::Timeout.
  std::chrono::milliseconds request_timeout{500};
  uint32_t max_attempts = 4;
  bool pulse_acc = false;            // "not local" returns here instead of continuing via the switch
  AllocationPolicy policy = AllocationPolicy::kUniform;
  uint64_t slab_bytes = 1 << 20;     // granularity requested from memory nodes
  DispatchPolicy dispatch;
  net::WorkerOptions worker;
  CacheOptions cache;
  // Lost connections.  A memory node whose connection failed is reconnected
  // on next use (Read, Write, Allocate) if the switch lists it as alive
  // again, at most once per call; otherwise the call fails at once with
  // Unavailable naming the node.  A lost switch is reconnected by the next
  // traversal (and by pending ones, which are then sent again under the same
  // request id): the client retries for up to reconnect_timeout until the
  // switch answers hello and lists every memory node this client knows;
  // then Unavailable.  After a failed attempt the next one waits for
  // reconnect_timeout to pass (calls in between fail at once).  0: never
  // reconnect the switch.
  std::chrono::milliseconds reconnect_timeout{3000};
  // A traversal whose memory node the switch reports unavailable (dead) is
  // sent again under the same request id every unavailable_retry_interval
  // until ride_out_unavailable has passed since the first such answer; then
  // the caller gets Unavailable.  So a memory node that restarts within that
  // time serves the request: a read just runs, and a STORE-bearing request
  // is answered from the node's durable record of it (or reported "outcome
  // unknown" if the node died while running it), never run twice.  0: fail
  // at once with Unavailable.
  std::chrono::milliseconds ride_out_unavailable{0};
  std::chrono::milliseconds unavailable_retry_interval{100};
  // How offloaded traversal requests reach their first memory node
  // (docs/ring.md).  The default is kMessages: on this project's 2-core
  // hosts the one-sided ring path is slower at saturation than messages
  // (`pulse bench kv`: 152 k vs 366 k GET/s; the node polls its rings for
  // 200 us after each entry, competing with the clients for the cores), so
  // it is chosen, not assumed.  kAuto: the ring path (one-sided writes into a ring at
  // the node, answers written back into a ring here) on connections whose
  // puts into the node's rings are really one-sided (shared memory on one
  // host, where the rings are UCX's allocations; RDMA), messages through
  // the switch on the others (TCP); kRing: the ring path on every connection (where UCX only
  // emulates puts, pulse carries them as messages: for tests); kMessages:
  // messages through the switch only.  Whatever the path, re-sends,
  // timeouts and every status mean the same; a request the ring cannot take
  // (no free slot, larger than a slot, no ring) goes through the switch.
  // The environment variable PULSE_REQUEST_PATH (auto, ring, am) overrides
  // it, so a test suite can be run over either path.
  RequestPath request_path = RequestPath::kMessages;
  // Slots of each ring (kRing/kAuto), and bytes per slot.
  uint32_t ring_slots = 1024;
  uint32_t ring_slot_bytes = 512;
  // How a ring's memory is laid out (docs/ring.md "Double-layer rings"):
  // kSlots, entry i in slot i % ring_slots, each at most a slot long, slots
  // reused in sequence; kDoubleLayer (seed 004 Rcmp 5.2), a queue of
  // ring_slots fixed descriptors over a data area of ring_slots x
  // ring_slot_bytes (rounded up to 64), entries of any length up to the
  // area, space freed in the order answers come, answers found in the order
  // the node wrote them.  The environment variable PULSE_RING_LAYOUT
  // (slots, double) overrides it.
  RingLayout ring_layout = RingLayout::kSlots;
  // The rack this CPU node belongs to (docs/racks.md); empty: the
  // environment variable PULSE_RACK, else none.  A memory node of the same
  // rack that offers this tenant its pool (`pulse memnode --rack
  // --rack-tenants`) is mapped, on this host, and Read, Write and the
  // windows of traversals run here reach this client's own allocations
  // there by loads and stores, with no message (counted in rack_reads,
  // rack_writes); everything else goes the normal way.  If the memory node
  // dies the mapping is not used again (the access goes the normal way and
  // fails or reconnects as for any lost node); a reconnection maps the
  // node's pool anew.
  std::string rack;
  // Hot pages (docs/tier.md): with a rack and a cluster whose switch holds a
  // page directory, this client counts its accesses to pages held in other
  // racks (those that go over the fabric) with seed 004's hotness formula
  // and these thresholds (T_l, H_p, lambda, R_rw; Connect refuses invalid
  // ones), and asks the switch to move a page into its rack when it becomes
  // hot (one request per page until the directory changes).  false: no
  // counting and no requests.
  bool hot_page_requests = true;
  tier::HotnessParams hotness;
  // The write buffer and page cache under FarLock holds (LockTierOptions).
  // Connect refuses a bad cache_page_bytes or threshold (InvalidArgument).
  LockTierOptions lock_tier;
  // Message aggregation (include/pulse/message_batch.h): traversal requests
  // started back to back for one memory node (TraverseAsync) leave in one
  // message, within these limits, when this thread next runs the client's
  // event loop (Poll, WaitAll, Traverse or any call that waits).  The
  // environment variable PULSE_BATCH ("off", "messages=N,bytes=B")
  // overrides it.
  BatchLimits batching;
};

struct TraverseOptions {
  uint32_t max_iterations = 0;   // per memory-node run; 0: the node's default
  bool follow_continue = true;   // re-issue on kContinue until done
  std::optional<ExecutionMode> mode;     // overrides ClientOptions::dispatch.mode
  std::optional<bool> pulse_acc;         // overrides ClientOptions::pulse_acc
};

struct TraversalResult {
  TraversalStatus status = TraversalStatus::kDone;
  uint64_t cur_ptr = 0;
  std::vector<uint8_t> scratch;
  uint32_t iterations = 0;
  uint32_t fault_pc = 0;
  uint64_t fault_addr = 0;
  bool offloaded = true;
  uint32_t issues = 0;            // requests sent by this client (re-issues included)
  uint32_t retransmissions = 0;   // of those, sent again after a timeout
};

struct ClientCounters {
  uint64_t traversals = 0;
  uint64_t offloaded = 0;
  uint64_t executed_locally = 0;
  uint64_t requests_sent = 0;
  uint64_t retransmissions = 0;
  uint64_t timeouts = 0;
  uint64_t reissues = 0;          // continue / pulse-acc not-local / unknown program
  uint64_t stale_responses = 0;   // answers to requests no longer pending
  uint64_t remote_reads = 0;
  uint64_t remote_read_bytes = 0;
  uint64_t remote_writes = 0;
  uint64_t traversal_iterations = 0;  // iterations of completed traversals
  uint64_t node_crossings = 0;        // windows read at the CPU node (not from the cache-only
                                      // prefix of an offload) on another memory node than the previous
  uint64_t cache_hits = 0;            // blocks found in the cache
  uint64_t cache_misses = 0;          // blocks fetched into it
  uint64_t cache_bytes = 0;           // bytes cached now
  uint64_t cache_evictions = 0;
  uint64_t writebacks = 0;            // dirty blocks written to far memory
  uint64_t cache_local_iterations = 0;  // iterations run here over cached windows
  uint64_t cache_only_traversals = 0;   // traversals the cache answered entirely
  uint64_t reconnections = 0;     // switch or memory node connections re-established
  uint64_t unknown_programs = 0;        // kUnknownProgram answers (the program is re-sent with code)
  uint64_t control_retransmissions = 0;  // control calls (alloc, hello, locks...) re-sent unanswered
  uint64_t unavailable_resends = 0;  // traversals re-sent after "node unavailable" (ride_out_unavailable)
  uint64_t ring_requests = 0;        // traversal requests posted into a ring (the rest went by the switch)
  uint64_t ring_fallbacks = 0;       // ring requests sent by the switch instead (no slot, too large)
  // Traversal messages sent straight to a memory node (direct routing) and
  // through the switch (switch routing, or a fall-back), and redirects: a
  // memory node returned a request unrun because it does not own cur_ptr
  // (this client's routing table was stale); it is re-sent through the switch.
  // A redirect naming a newer table version than this client's asks the
  // switch for its table (table_refreshes: one per newer version seen); the
  // table arrives as the switch's push.
  uint64_t direct_sends = 0;
  uint64_t switch_sends = 0;
  uint64_t redirects = 0;
  uint64_t table_refreshes = 0;
  // Critical-path accounting of offloaded traversals, summed when each ends:
  // the messages its answer travelled, request to response, over every
  // re-issue and re-send the answer needed (TraversalMessage::legs), and
  // their bytes (the requests' encoded sizes, and each later leg at the size
  // of the message that came back: a continuation carries the same state;
  // code attached to one is not counted).  docs/evaluation.md.
  uint64_t critical_path_messages = 0;
  uint64_t critical_path_bytes = 0;
  // Message aggregation: active messages that carried traversal requests
  // (plain or kAmBatch envelopes) and the requests they carried
  // (requests_carried / request_messages: requests per message); envelopes
  // received, the responses in them, and envelopes refused as malformed.
  uint64_t request_messages = 0;
  uint64_t requests_carried = 0;
  uint64_t envelopes_in = 0;
  uint64_t responses_in_envelopes = 0;
  uint64_t malformed_envelopes = 0;
  // One-sided reads and writes are re-sent by the transport: net_counters().rma_retransmissions.
  // The rack tier (ClientOptions::rack): reads and writes served by loads
  // and stores through a mapped rack pool (no message; these are not in
  // remote_reads / remote_writes), iterations of offloaded traversals run
  // here over the rack pool before the first window outside it, pools
  // mapped, and accesses that found their node's mapping dead and went the
  // normal way.
  uint64_t rack_reads = 0;
  uint64_t rack_read_bytes = 0;
  uint64_t rack_writes = 0;
  uint64_t rack_write_bytes = 0;
  uint64_t rack_prefix_iterations = 0;
  uint64_t rack_mappings = 0;
  uint64_t rack_dead_mappings = 0;
  // Hot pages (ClientOptions::hot_page_requests): accesses counted on pages
  // of other racks, swap requests the switch took (and of those, the ones it
  // dropped as duplicates of a queued request), requests that failed.
  uint64_t remote_page_accesses = 0;
  uint64_t swap_requests = 0;
  uint64_t swap_requests_dropped = 0;
  uint64_t swap_request_errors = 0;
  // Pages that move (docs/tier.md): rack accesses refused by a frame's
  // closed gate (its page was moving; the access went the normal way), and
  // accesses that waited for a newer directory because a memory node said
  // their page was moving or had moved.
  uint64_t rack_gate_refusals = 0;
  uint64_t page_move_waits = 0;
  // Under locks (LockTierOptions): writes kept in the write buffer, batches
  // written out (flushes) and the one-sided writes they took, bytes written
  // out, reads the buffer answered with no far read, buffered bytes dropped
  // unwritten (a holder that is gone, FarLock::Forget, or a failed flush);
  // reads of the lock page cache that hit and missed.
  uint64_t lock_buffered_writes = 0;
  uint64_t lock_buffer_flushes = 0;
  uint64_t lock_buffer_flush_writes = 0;
  uint64_t lock_buffer_flushed_bytes = 0;
  uint64_t lock_buffer_reads = 0;
  uint64_t lock_buffer_dropped_bytes = 0;
  uint64_t lock_cache_hits = 0;
  uint64_t lock_cache_misses = 0;
};

class Client {
 public:
  using TraverseCallback = std::function<void(Result<TraversalResult>)>;

  // Connects to the switch, learns the memory nodes and connects to each.
  // Errors: Unavailable / Timeout naming the address that failed.
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  ~Client();

  uint32_t memory_nodes() const;
  uint32_t cpu_node() const;
  // The memory node owning far address addr, if any.
  std::optional<uint32_t> NodeOf(uint64_t addr) const;

  // Allocates `bytes` (8-byte aligned) of far memory owned by this client's
  // tenant: on memory node `node` if given (with any policy; kPartitioned
  // requires it), else where the policy places it.
  // Errors: InvalidArgument (bad size or node), ResourceExhausted.
  Result<uint64_t> Allocate(uint64_t bytes, std::optional<uint32_t> node = std::nullopt);
  // Returns memory from this client's Allocate for reuse by this client's
  // later allocations (the memory node gets it back with the session or
  // the root; docs/cluster.md "Memory lifetimes").  InvalidArgument if addr
  // is not a live allocation of this client.
  Status Free(uint64_t addr);

  // ---- lifetimes (docs/cluster.md "Memory lifetimes") ----
  // Far memory belongs to this client's session: when the Client is
  // destroyed, or killed and its connections stay gone for the memory
  // nodes' session grace (`pulse memnode --session-grace-ms`), the memory
  // nodes reclaim it (scrubbed, reusable by anyone).  To keep a structure,
  // publish it as a durable root of the tenant: a name, and the address a
  // later client opens it by (e.g. BTree::header_address()).

  // Makes every allocation this client holds (on every memory node) durable
  // under root `name` of its tenant, records `addr` as the root's address,
  // and makes this client's later allocations durable under it too (a
  // structure that keeps growing stays whole).  Dirty cached blocks are
  // written back first.  Publishing a name again moves the address.
  // Errors: InvalidArgument (addr outside every node, a name that is empty
  // or longer than 47 bytes), NotFound / PermissionDenied (addr in no
  // allocation / another tenant's), ResourceExhausted (a node holds its
  // maximum of roots), Unavailable, Timeout.
  Status PublishRoot(const std::string& name, uint64_t addr);
  // The address root `name` of this tenant was published with; from now on
  // this client's allocations are durable under that root (so what it adds
  // to the structure stays with it).  NotFound if the tenant has no such
  // root; Unavailable, Timeout.
  Result<uint64_t> OpenRoot(const std::string& name);
  // Frees every allocation of root `name` on every memory node (by any
  // client of the tenant) and forgets the name.  NotFound if no node holds
  // it; Unavailable, Timeout.
  Status DropRoot(const std::string& name);
  // This client's session id (what `pulse cluster status` counts as session
  // memory is held by such sessions).
  uint64_t session() const;

  // One-sided reads and writes of far memory (through the cache when
  // ClientOptions::cache is enabled).  Only this tenant's allocations are
  // reachable: each allocation has its own remote key, which its memory
  // node hands to its tenant only.  Errors: InvalidArgument (address
  // outside every node), NotFound (in no allocation), PermissionDenied
  // (another tenant's memory, or memory reclaimed since), Unavailable,
  // Timeout.
  Status Read(uint64_t addr, void* dst, size_t length);
  Status Write(uint64_t addr, const void* src, size_t length);
  // The cache: writes dirty blocks back / does that and drops every block.
  // No-ops without a cache.  Errors: those of Write.
  Status FlushCache();
  Status InvalidateCache();

  // The lock service of the memory node owning lock_addr (an address of
  // this tenant's memory), used by pulse::ds::FarLock: one attempt to take
  // the reader-writer lock named by lock_addr for `holder` (any 64-bit id)
  // until `lease` from now; never waits for the lock.  Returns whether it
  // was granted.  Errors: InvalidArgument (lock_addr outside every memory
  // node or a bad lease), NotFound (lock_addr in no allocation of its
  // node), PermissionDenied (lock_addr is another tenant's memory),
  // Unavailable, Timeout.
  Result<bool> TryLock(uint64_t lock_addr, uint64_t holder, bool exclusive, std::chrono::milliseconds lease);
  // Extends the lease.  FailedPrecondition if holder no longer holds the
  // lock (its lease expired, or it never held it): the memory node is not
  // in the state the call needs, while NotFound keeps meaning that
  // lock_addr is in no allocation.  Otherwise the errors of TryLock.
  Status RenewLock(uint64_t lock_addr, uint64_t holder, std::chrono::milliseconds lease);
  // Releases holder's hold.  FailedPrecondition if it holds none (e.g. it
  // expired); otherwise the errors of TryLock.
  Status Unlock(uint64_t lock_addr, uint64_t holder);
  // The lock tier (LockTierOptions), told by pulse::ds::FarLock: a hold was
  // taken (the page cache is dropped: others may have written); a hold is
  // about to be released (an exclusive one's write buffer is written out
  // and waited for, the page cache dropped; errors: those of the writes —
  // the buffered writes are dropped then, and the caller must report that
  // they may not have reached far memory); a hold was lost without release
  // (the holder is treated as dead: buffered writes are dropped unwritten).
  void EnterLock(bool exclusive);
  Status LeaveLock(bool exclusive);
  void AbandonLock(bool exclusive);

  // Runs a traversal from (cur_ptr, scratch) and waits for its end.  The
  // result's status says how it ended (kDone, a fault, ...); the Status is
  // non-OK only when the cluster could not answer (Timeout after the retry
  // budget, Unavailable) or when a STORE-bearing traversal re-sent to a
  // memory node that restarted while running it may or may not have taken
  // effect (OutcomeUnknown; it is not run again).
  Result<TraversalResult> Traverse(const ProgramRef& program, uint64_t cur_ptr,
                                   std::vector<uint8_t> scratch, const TraverseOptions& options = {});
  // Starts a traversal; `done` runs inside a later Poll/WaitAll/sync call.
  // Many may be in flight.  CPU-node executions complete before returning.
  // An offloaded request leaves when this thread next runs the event loop
  // (Poll, WaitAll, Traverse or any call that waits), together with the
  // others started meanwhile for the same memory node
  // (ClientOptions::batching).
  void TraverseAsync(const ProgramRef& program, uint64_t cur_ptr, std::vector<uint8_t> scratch,
                     const TraverseOptions& options, TraverseCallback done);
  // Makes progress without blocking; handles timeouts.  (Exception: after
  // the switch was lost with traversals pending, it may wait up to
  // ClientOptions::reconnect_timeout reconnecting it.)
  void Poll();
  // Drives the fabric until no asynchronous traversal is pending.
  // Timeout if some are still pending after `timeout`.
  Status WaitAll(std::chrono::milliseconds timeout);
  size_t pending() const;

  // Sends a no-op along the traversal path (CPU node -> switch -> memory node
  // owning addr -> switch -> CPU node) and waits for it: the raw round trip.
  Status Ping(uint64_t addr);

  // The offload rule in force (after Connect: with the cluster's
  // calibration), and a way to change it, e.g. eta.
  const DispatchPolicy& dispatch_policy() const;
  void SetDispatchPolicy(const DispatchPolicy& policy);

  const ClientCounters& counters() const;
  const net::Counters& net_counters() const;

  // The tenant this client acts for.
  TenantId tenant() const;

 private:
  struct Impl;
  friend struct ClientInternal;  // layers above the client (src/client/client_internal.h)
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pulse
