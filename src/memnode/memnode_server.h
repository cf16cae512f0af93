// MemNodeServer, `pulse memnode`: one memory node of the rack as a process.
// Its traversal engine is a MemNodeService (service.h: no I/O, unit-tested
// alone); everything with I/O is here.
//
// It owns a pool (a named shared-memory object, registered with the UCX
// worker for one-sided access by CPU nodes), an allocator over the pool, the
// range table built from the allocations, and the engine
// (MemNodeService).  Far address A of node N is FarBase(N) + (offset of A in
// the pool).  On Start() it listens, connects to the switch (retrying until
// a deadline) and registers its pool there (register_memnode).  Run() then
// serves:
//   kAmControl   hello, alloc, free, key, lock, lock_renew, unlock,
//                persist, root_get, root_drop, tenant_drop, end_session,
//                stats, shutdown (include/pulse/cluster.h)
//                from CPU nodes connected directly;
//   kAmTraversal requests from the switch, from CPU nodes and from other
//                memory nodes (direct routing): decoded, run on the engine,
//                and sent on (malformed ones are counted and dropped).  The
//                switch says how (register_memnode's answer): with routing
//                "switch" every answer goes to the switch; with "direct" a
//                "not local" continuation goes straight to the memory node
//                owning its cur_ptr and a final response straight to the
//                CPU node (Peers, peers.h), each falling back to the switch
//                when that node cannot be reached (or, for a memory node,
//                has no connection open yet: the event loop opens those
//                to every peer of each routing table it gets, outside
//                handlers and engine passes).  A request for a cur_ptr
//                outside this node's pool (a sender with a stale routing
//                table) is returned unrun as a redirect (kFlagRedirect);
//   kAmBatch     several kAmTraversal messages in one envelope
//                (include/pulse/message_batch.h), each handled as if it
//                came alone; a malformed envelope is counted and dropped
//                whole.  Outgoing traversal messages are queued per
//                destination during an engine pass and flushed at its end
//                (protocol/outbox.h): what one pass produced for one
//                destination shares messages;
//   kAmRouting   the switch's routing table (protocol/routing_table.h),
//                with the page directory of a racked cluster
//                (tier/tier_push.h): a request for a page the directory
//                puts on another node is redirected like one for another
//                node's range, and continuations follow the directory;
//   extensions   the services a higher layer registered in
//                options.extensions (memnode/extension.h; `pulse memnode`
//                registers the RPC baselines' service, src/rpc), each on its
//                own active-message id, answered to the caller.
// Tenants: every request that touches memory acts for the tenant
// node::RequestTenant (node/node_tenant.h) gives it and is refused with
// PermissionDenied for memory of another tenant.  One-sided access: each
// allocation is registered with the UCX worker on its own, and its remote
// key is handed only to its tenant (in the alloc answer, or by "key" for an
// address of the tenant's memory), so no key reaches another tenant's
// bytes (docs/security.md says what this does and does not protect).
// Lifetimes: an allocation belongs to a client session (sessions.h) unless
// it is durable under a named root of its tenant; session memory is
// reclaimed when the session ends or its lease runs out.
// Event loop: while the engine has work it alternates one non-blocking
// progress of the network with an engine slice; when it has none it waits
// for the network per the Worker's poll mode (adaptive by default: poll a
// short window after traffic, then sleep on the event fd), so an idle node
// uses no CPU.  If the switch goes away the node keeps serving CPU nodes and
// reconnects (and re-registers) once a second.  With several engine
// pipelines (options.service.pipelines > 1) the engine runs on their
// threads: this thread only admits to them and answers what they finished
// (they wake its network wait), and "has work" means exactly that.
//
// Restart: a clean exit unlinks the pool.  A node that dies (SIGKILL, a
// crash) leaves its pool object behind; started again with the same node id
// and shared-memory name it re-attaches that object (reattach_pool): the
// data and the allocations (owners, permissions; AllocationJournal) survive,
// so acknowledged writes stay readable.  What does not survive is in-process
// state: the program cache (CPU nodes re-send the code on "unknown
// program").  STORE-bearing requests are recorded in the pool too
// (StoreRecord): one retransmitted after the restart is answered from the
// record, or refused with kOutcomeUnknown if the crash came while it ran;
// it never runs twice.
//
// Threading: one thread calls Start() and Run(); RequestStop() may be called
// from any thread (e.g. a signal-handling thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "memnode/allocation_journal.h"
#include "memnode/allocator.h"
#include "memnode/extension.h"
#include "memnode/lock_table.h"
#include "memnode/peers.h"
#include "node/node_log.h"
#include "memnode/pool.h"
#include "memnode/ring_server.h"
#include "memnode/sessions.h"
#include "memnode/service.h"
#include "memnode/store_record.h"
#include "protocol/control_replay.h"
#include "protocol/outbox.h"
#include "protocol/routing_table.h"
#include "pulse/calibration.h"
#include "pulse/net.h"
#include "tier/tier_push.h"

namespace pulse::memnode {

struct MemNodeServerOptions {
  uint32_t node = 0;
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;          // 0: any free port
  std::string advertise_host;        // host CPU nodes use to reach us; empty: listen_host
  std::string switch_host = "127.0.0.1";
  uint16_t switch_port = 7100;
  uint64_t pool_bytes = 0;
  uint64_t granularity_bytes = 64 * 1024;
  std::string shm_name;              // empty: "/pulse-node-<node>-<port>"
  MemNodeServiceOptions service;
  net::WorkerOptions worker;
  std::chrono::milliseconds connect_timeout{10000};  // to reach the switch at start
  uint64_t engine_budget = 4096;     // iterations per engine slice between network polls
  uint32_t max_scratch_bytes = 64 * 1024;  // larger messages are malformed
  // Measure the engine's t_i and t_d at start (about 0.3 s) and report them
  // in "hello" for the CPU nodes' offload rule (include/pulse/calibration.h).
  bool calibrate = true;
  // The extension registry: services of higher layers (e.g. the RPC
  // baselines, src/rpc/rpc_extension.h) the node builds and hosts.
  std::vector<MemNodeExtensionFactory> extensions;
  // A pool object of the same name left by a node of this id that died
  // (SIGKILL, crash) is re-attached: its data and allocations (the
  // AllocationJournal in its metadata area) are kept, so a restarted node
  // serves what it served before.  false: it is replaced by a fresh pool.
  bool reattach_pool = true;
  // Returned as "instance" in `stats`: the launcher tells its process from
  // another one answering on the same address (src/cluster/launcher.h).
  std::string instance_id;
  // How long a client session outlives its last connection (its lease)
  // before its memory is reclaimed (sessions.h).
  std::chrono::milliseconds session_grace{10000};
  // The same for the sessions a restarted node finds in its journal: their
  // clients notice the restart only when they next use the node.
  std::chrono::milliseconds restored_session_grace{60000};
  // The ring request path (ring_server.h, docs/ring.md): clients that ask
  // for rings get them; off: kAmRingOpen goes unanswered and clients keep
  // to messages.
  bool ring_path = true;
  net::ring::RingHostOptions ring;
  // The rack this node is the pool of (docs/racks.md); empty: none.  Its
  // "hello" answer names the rack, and offers the pool object ("rack_pool":
  // rack::PoolOffer) to connections of the tenants in rack_tenants, whose
  // CPU nodes of the same rack then read and write their memory by loads and
  // stores.  No tenant is offered the pool unless listed.
  std::string rack;
  std::set<TenantId> rack_tenants;
  // Message aggregation (include/pulse/message_batch.h): the responses and
  // continuations one engine pass produced for one destination leave in
  // one message, within these limits ($PULSE_BATCH overrides them).
  BatchLimits batching;
};

// Counters of the process beyond those of the service.
struct MemNodeServerCounters {
  uint64_t malformed = 0;          // traversal messages that did not decode
  uint64_t responses_dropped = 0;  // no switch to send them to
  // Per-leg time on this node (issue 14; with the service's queue_wait_ns
  // and engine_ns): traversal messages' handlers (decode, admission, the
  // answers of refused ones queued), outbox flushes (encoding done, the
  // sends), and the extensions' handlers with their replies' sends (the
  // RPC baselines' whole time on the node).
  uint64_t handle_ns = 0;
  uint64_t send_ns = 0;
  uint64_t extension_ns = 0;
  uint64_t bytes_in = 0;           // traversal message bytes
  uint64_t bytes_out = 0;
  uint64_t control_ops = 0;
  uint64_t control_errors = 0;
  // Direct routing: redirects sent (a request for a cur_ptr not ours) and
  // received.  (Continuations sent straight to another memory node, final
  // responses straight to the CPU node and messages sent to the switch are
  // counted by the outboxes: stats' direct_continuations, direct_responses,
  // switch_sends and "aggregation".)
  uint64_t redirects_sent = 0;
  uint64_t redirects_received = 0;
  // Aggregation, receiving: kAmBatch envelopes, the traversal messages they
  // carried, and envelopes refused whole as malformed.
  InboundBatches batches_in;
};

class MemNodeServer {
 public:
  // Creates the UCX worker and installs the handlers; no network yet.
  static Result<std::unique_ptr<MemNodeServer>> Create(const MemNodeServerOptions& options,
                                                       const node::NodeLog* log);
  // Closes the switch endpoint (the switch then marks this node dead), then
  // every other one, unregisters and unlinks the pool.
  ~MemNodeServer();
  MemNodeServer(const MemNodeServer&) = delete;
  MemNodeServer& operator=(const MemNodeServer&) = delete;

  // Listens, creates the pool, connects to the switch and registers there.
  // Errors: the address is in use, the pool cannot be created, the switch
  // is unreachable until the deadline or refuses the registration (the
  // switch's error with its code, e.g. InvalidArgument for an overlapping
  // range), or RequestStop() came first (kUnavailable "stopped").
  Status Start();
  // Serves until a shutdown operation or RequestStop().  Errors only if the
  // network fails.
  Status Run();
  // Makes Start()/Run() return soon.  Thread-safe.
  void RequestStop();

  uint16_t port() const { return port_; }
  const std::string& shm_name() const { return shm_name_; }

 private:
  EngineCalibration calibration_;
  MemNodeServer(const MemNodeServerOptions& options, const node::NodeLog* log,
                std::unique_ptr<net::Worker> worker);
  bool stopping() const { return stop_.load(std::memory_order_acquire); }

  void OnControl(net::EndpointId from, std::span<const uint8_t> payload);
  void OnControlReply(net::EndpointId from, std::span<const uint8_t> payload);
  void OnTraversal(net::EndpointId from, std::span<const uint8_t> payload);
  // A kAmBatch envelope: each inner message handled as OnTraversal would.
  void OnBatch(net::EndpointId from, std::span<const uint8_t> payload);
  void OnDisconnect(net::EndpointId ep, const Status& why);
  // Request `p` for extension `e` from connection `from`, by message or by
  // a ring entry (extension_entry.h): the extension checks the claimed
  // tenant against the connection's; an immediate answer goes back by
  // message on e->reply_am().
  void HandleExtensionRequest(MemNodeExtension* e, net::EndpointId from, std::span<const uint8_t> p);
  // The extensions' queued work (MemNodeExtension::Poll); true if some remains.
  bool PollExtensions();

  Result<nlohmann::json> Hello();
  // The rack fields of a hello answer to `from` (options.rack).
  void AddRackFields(net::EndpointId from, const nlohmann::json& body, nlohmann::json* reply) const;
  Result<nlohmann::json> Alloc(net::EndpointId from, const nlohmann::json& body);
  Result<nlohmann::json> Free(net::EndpointId from, const nlohmann::json& body);
  // lock / lock_renew / unlock: the lock service (memnode/lock_table.h).
  Result<nlohmann::json> LockOp(net::EndpointId from, const std::string& op, const nlohmann::json& body);
  nlohmann::json Stats() const;
  // stats' "aggregation": the outboxes and the envelopes received.
  nlohmann::json AggregationJson() const;

  // ---- memory ownership and lifetimes (memory_ops.cc) ----
  // key / persist / root_get / root_drop / tenant_drop / end_session; null
  // json if `op` is none of them.
  std::optional<Result<nlohmann::json>> MemoryOp(net::EndpointId from, const std::string& op,
                                                 const nlohmann::json& body);
  Result<nlohmann::json> Key(net::EndpointId from, const nlohmann::json& body);
  Result<nlohmann::json> Persist(net::EndpointId from, const nlohmann::json& body);
  Result<nlohmann::json> RootGet(net::EndpointId from, const nlohmann::json& body);
  Result<nlohmann::json> RootDrop(net::EndpointId from, const nlohmann::json& body);
  Result<nlohmann::json> TenantDrop(net::EndpointId from, const nlohmann::json& body);
  Result<nlohmann::json> EndSession(net::EndpointId from, const nlohmann::json& body);
  // The session a request names ("session"), bound to `from`, or the
  // connection's own session.
  Result<uint64_t> RequestSession(net::EndpointId from, TenantId tenant, const nlohmann::json& body,
                                  std::string_view op);
  // The root `name` of `tenant` on this node, created if `create`.
  Result<uint32_t> FindRoot(TenantId tenant, const std::string& name, bool create, std::string_view op);
  // Registers the allocation at pool `offset`, far address `base` (its
  // node's own span, or a moved page's), for one-sided access and records
  // its owner and lifetime (journal, sessions).
  Status Adopt(uint64_t base, uint64_t offset, uint64_t length, TenantId tenant, uint8_t perms, Lifetime lifetime,
               uint64_t owner, bool journal);
  // The pool offset of a range of this node's table.
  uint64_t PoolOffsetOf(const Range& range) const { return static_cast<uint64_t>(range.host - pool_->data()); }
  // The allocation's key and placement for its tenant.
  nlohmann::json KeyJson(uint64_t offset) const;
  // Frees the allocation at `offset` whoever owns it: unregistered, out of
  // the range table and the journal, scrubbed, back to the allocator.
  // Returns its length.
  uint64_t Reclaim(uint64_t offset);
  // Reclaims the sessions whose lease ran out.
  void ReclaimExpiredSessions();
  // Pool use by tenant and lifetime, for stats.
  nlohmann::json TenantUse() const;

  // Connects to the switch, waiting at most `timeout` (retrying refused
  // connections), and sends register_memnode.
  Status ConnectSwitch(std::chrono::milliseconds timeout);
  void SendRegistration();
  void MaybeReconnect();
  void SendToSwitch(TraversalMessage&& message);
  // Sends what this pass queued (responses, continuations, messages for the
  // switch), aggregated per destination; a direct send that fails goes to
  // the switch.
  void FlushOutboxes();
  // Sends what the engine answered where it goes next: per the routing
  // mode, to the switch or straight to the next memory node / the CPU node.
  void Dispatch(TraversalMessage&& message);
  // Takes the switch's routing mode and table from its register_memnode
  // answer or a push; false if malformed.
  bool AdoptRouting(const nlohmann::json& table);
  // Opens the connections to other memory nodes that the routing table or
  // the traversal path asked for (Peers::ConnectWanted); outside handlers
  // and engine passes only.
  void ConnectPeers();
  // ---- the page directory (tier_hooks.cc, docs/tier.md) ----
  // Takes the page directory carried by a routing table's JSON if newer.
  void AdoptPages(const nlohmann::json& table);
  // True if this node holds the byte at far address `addr` now: by the page
  // directory for a paged address, else by its own range.
  bool HoldsHere(uint64_t addr) const;
  // The memory node holding `addr` now: the directory's node for a paged
  // address, else the routing table's owner.
  std::optional<NodeId> OwnerOf(uint64_t addr) const;
  // ---- moving pages (page_moves.cc, docs/tier.md) ----
  // page_freeze, frame_key, page_thaw from the switch's swap driver;
  // nullopt for any other op.
  std::optional<Result<nlohmann::json>> PageMoveOp(net::EndpointId from, const std::string& op,
                                                   const nlohmann::json& body);
  // empty_frames: {"frames": [...]}, the frames holding no allocation and
  // not frozen (a swap's cheapest victims).
  nlohmann::json EmptyFrames(uint64_t page_bytes) const;
  Result<nlohmann::json> FreezeFrame(uint64_t frame, uint64_t page, uint64_t page_bytes);
  Result<nlohmann::json> FrameKey(uint64_t frame, uint64_t page_bytes);
  Result<nlohmann::json> AdoptFrame(uint64_t frame, uint64_t page, const nlohmann::json& body, uint64_t page_bytes);
  Result<nlohmann::json> ThawFrame(uint64_t frame, uint64_t page, uint64_t page_bytes, bool home);
  nlohmann::json PageMovesJson() const;
  // Aborted if the directory puts the page of `addr` on another node, or
  // its frame here is frozen: the caller asks again where the directory
  // will say.  `op` names the request in the message.
  Status PageMovedAway(uint64_t addr, std::string_view op) const;
  // True if pool `offset` lies in a withheld frame.
  bool FrameWithheld(uint64_t offset) const;
  // Keeps a traversal request for a frozen page here until its thaw; false
  // if cur_ptr is not in a frozen frame of this node.
  bool HoldIfFrozen(net::EndpointId from, uint64_t cur_ptr, std::span<const uint8_t> payload);
  // What a frame's gate says it holds per the directory (rack::FrameGates).
  uint64_t GateHolds(uint64_t frame) const;
 public:
  // An allocation of a page on the move: what page_freeze answers and
  // page_adopt takes.  Only session memory moves.
  struct MovedAllocation {
    uint64_t base = 0;     // far address
    uint64_t in_page = 0;  // offset in its page
    uint64_t length = 0;
    uint32_t tenant = 0;
    uint8_t perms = 0;
    uint64_t owner = 0;  // session id
  };

 private:
  // A frame under a swap: the page it held, its allocations revoked at the
  // freeze, those adopted for the page a transfer put in it.
  struct FrozenFrame {
    uint64_t page = 0;
    std::vector<MovedAllocation> revoked;
    std::vector<MovedAllocation> adopted;
  };
  void DropAdopted(uint64_t frame, FrozenFrame& f, uint64_t page_bytes);
  void RestoreRevoked(uint64_t frame, const FrozenFrame& f, uint64_t page_bytes);
  // Serves `m` from the frame at pool offset `frame_begin`: its range and
  // its own registered region (a key for its tenant).
  Status ServeMoved(uint64_t frame_begin, const MovedAllocation& m);
  struct HeldTraversal {
    net::EndpointId from = net::kInvalidEndpoint;
    std::vector<uint8_t> payload;
  };
  static constexpr size_t kMaxHeldTraversals = 4096;
  // Withholds from the allocator every frame the directory says holds a
  // page other than its home one (after a restart, the frames that moved
  // before it).
  void WithholdForeignFrames();
  // After the pool is mapped: restores the allocations of a re-attached pool
  // from its journal, or starts an empty journal.
  Status RestoreAllocations();
  std::string Address() const;

  MemNodeServerOptions options_;
  const node::NodeLog* log_;
  std::atomic<bool> stop_{false};
  // Destruction order matters: the region is unregistered before the worker
  // goes away, and the pool is unmapped last.
  std::unique_ptr<SharedPool> pool_;
  std::unique_ptr<net::Worker> worker_;
  std::unique_ptr<RingServer> ring_;  // options.ring_path; before the worker goes
  struct Owned {
    uint64_t base = 0;  // far address: the node's span, or a moved page's
    uint64_t length = 0;
    TenantId tenant = 0;
    uint8_t perms = 0;
    Lifetime lifetime = Lifetime::kSession;
    uint64_t owner = 0;  // session id or root slot
    net::MemoryRegion region;  // this allocation alone, for its tenant's keys
  };
  std::map<uint64_t, Owned> owned_;  // every allocation, by pool offset
  std::map<uint32_t, RootEntry> roots_;  // by journal slot
  SessionTable sessions_;
  std::chrono::steady_clock::time_point next_expiry_check_ = std::chrono::steady_clock::time_point::max();
  std::unique_ptr<PoolAllocator> allocator_;
  std::unique_ptr<AllocationJournal> journal_;
  std::unique_ptr<StoreRecord> store_record_;  // in the metadata area after the journal
  RangeTable table_;
  MemNodeService service_;
  std::vector<std::unique_ptr<MemNodeExtension>> extensions_;
  LockTable locks_;
  ControlReplay control_replay_;  // answers of alloc/free/unlock, for re-sent requests
  MemNodeService::SendFn send_;

  uint16_t port_ = 0;
  std::string shm_name_;
  uint64_t far_base_ = 0;
  net::EndpointId switch_ep_ = net::kInvalidEndpoint;
  uint64_t registration_seq_ = 0;    // seq of the register_memnode in flight
  int registration_state_ = 0;       // 0 waiting, 1 accepted, -1 refused
  Status registration_refusal_;      // the switch's error, with its code
  std::chrono::steady_clock::time_point next_reconnect_{};
  uint64_t next_seq_ = 1;
  RoutingMode routing_mode_ = RoutingMode::kSwitch;  // until the switch says otherwise
  RoutingTable routing_;
  tier::PageLocator pages_;  // the switch's page directory, with the table
  Peers peers_;
  MemNodeServerCounters counters_;
  // Frames a swap is changing (page_moves.cc); after worker_, so the
  // regions go before it.
  struct PageMoves {
    std::map<uint64_t, FrozenFrame> frozen;  // by frame index
    std::set<uint64_t> withheld;  // frozen, or holding another node's page: not allocatable
    std::map<uint64_t, net::MemoryRegion> regions;  // a frozen frame's one-frame key
    std::optional<net::MemoryRegion> swap_buffer;   // one page, beyond the pool
    std::vector<HeldTraversal> held;  // requests for frozen pages, until a thaw
    uint64_t directory_at_least = 0;  // the version the last thaw's swap published
    uint64_t frozen_total = 0;
    uint64_t revoked_total = 0;  // allocations revoked by freezes
    uint64_t moved_out = 0;      // allocations that left with their page
    uint64_t moved_in = 0;       // allocations adopted for good
    uint64_t held_total = 0;
    uint64_t held_dropped = 0;
    uint64_t refused_straddling = 0;
    uint64_t refused_durable = 0;
    uint64_t refused_locked = 0;
    uint64_t gate_timeouts = 0;
  } page_moves_;
  // Traversal messages queued in this pass, by direction: final responses
  // to CPU nodes, continuations to other memory nodes, anything to the
  // switch.
  Outbox to_cpu_;
  Outbox to_peers_;
  Outbox to_switch_;
};

}  // namespace pulse::memnode
