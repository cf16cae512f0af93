// The fabric: every byte between pulse nodes goes through UCX (UCP API).
//
// A Worker is one UCP context plus one UCP worker.  It listens for and opens
// connections (endpoints), sends active messages, registers memory for
// one-sided access and does one-sided Get/Put on a peer's registered memory.
// All of it is driven by one thread that calls Progress(), WaitForEvent() or
// RunUntil(); handlers run on that thread inside those calls.
//
// Transport: UCX chooses (RDMA where the machine has it, TCP otherwise).
// The environment variable UCX_TLS, read when the Worker is created,
// restricts the choice, e.g. UCX_TLS=tcp; WorkerOptions::transports does the
// same per Worker and wins over the environment.  Other UCX_* variables
// apply as documented by UCX.  Every endpoint asks UCX to report a dead peer
// (error handling mode PEER), and UCX 1.13 then leaves out its shared-memory
// transports unless UCX_POSIX_ERROR_HANDLING=y and UCX_SYSV_ERROR_HANDLING=y
// are in the environment.  A program linked with pulse::net sets both at
// start-up (before main) unless they are already set, so processes on one
// host talk through shared memory (~5x lower latency than TCP loopback); a
// dead peer is still reported, through the handshake's TCP connection (see
// "Connections" below).
// Set them to "n" to keep UCX's own default.
//
// Connections: a Worker's listening port is a plain TCP socket owned by
// pulse, not UCX's connection manager.  A connecting peer first runs pulse's
// handshake on it (src/net/handshake.h: fixed-size, length-checked,
// versioned messages, every read bounded in bytes and time): both sides
// prove knowledge of a key by HMAC-SHA256 challenge-response over both
// sides' nonces (see Credentials), then exchange endpoint ids and UCX
// worker addresses; only then does either side create a UCX endpoint (to
// the other's worker address).  A peer that fails the handshake gets a
// refusal (or, for bytes that are not a handshake, nothing) and the
// connection is closed; it never reaches UCX.  The TCP connection stays
// open for the life of the endpoint: its end tells the other side that the
// peer closed or died.  What UCX itself still reads from the network is in
// docs/security.md.
//
// Waiting: nothing here waits forever.  Every blocking call takes a timeout
// and returns Status::Timeout when it passes.  How the thread waits is set by
// WorkerOptions::poll_mode (see PollMode).
//
// Errors are values (pulse::Status).  Codes used here:
//   kInvalidArgument  bad input, or a blocking call made from inside a handler
//   kNotFound         unknown or already closed endpoint id
//   kUnavailable      the peer is dead, unreachable or has closed
//   kTimeout          the deadline passed
//   kOutOfRange, kPermissionDenied  a Get/Put outside the peer's region, or
//                     to a region the peer no longer has registered
//   kIoError/kInternal  anything else UCX reported (the message names it)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pulse/status.h"

// UCX handle types, declared here so that users need no UCX headers.
struct ucp_context;
struct ucp_mem;
struct ucp_rkey;

namespace pulse::net {

// Identifies one connection of one Worker.  Ids are never reused by a Worker;
// kInvalidEndpoint is never a valid id.
using EndpointId = uint64_t;
inline constexpr EndpointId kInvalidEndpoint = 0;

using Clock = std::chrono::steady_clock;
// Any std::chrono duration (milliseconds, microseconds, ...) converts to it.
using Duration = std::chrono::nanoseconds;

// How WaitForEvent() (and so RunUntil() and every blocking call) waits.
enum class PollMode {
  // Keep polling for poll_window_us after the last traffic (a message sent
  // or received, an operation completed), then arm the worker's event fd and
  // sleep until traffic, Wake() or the deadline.  poll_window_us = 0 is pure
  // sleep.  The default: low latency under load, no CPU when idle.
  kAdaptive,
  // Never sleep: poll until the deadline.  For dedicated cores only.
  kBusy,
  // Always sleep on the event fd when there is nothing to do.
  kSleep,
};

// How Get/Put reach a peer's memory.
enum class RmaPath {
  // kUcx when the endpoint has a UCX RMA lane that needs no CPU at the peer
  // (RDMA, CMA, ...), else kMessages.  The default.
  kAuto,
  // Always ucp_get_nbx/ucp_put_nbx.  Over TCP UCX 1.13 emulates these with
  // its own messages and aborts the serving process if the requester's
  // endpoint fails while a reply is being sent; avoid on TCP.
  kUcx,
  // pulse's own read/write request over active messages, served by the
  // peer's worker thread inside its progress; checked against the peer's
  // registered regions; survives failures on either side.
  kMessages,
};

// The default adaptive poll window.  From `pulse bench net` on the 2-core
// test machine (one-way median latency): back-to-back ping-pong takes
// ~1 us over shared memory and ~5 us over TCP with any window >= 10 us
// (11-13 us over TCP with pure sleep).  For isolated requests (1 ms apart)
// a 50 us window keeps the requester polling through the peer's wake-up:
// 13-18 us over shared memory and 18-31 us over TCP, against 15-30 and
// 26-39 us with 10-20 us windows, for ~75 us of server CPU per isolated
// message and no CPU when idle.  Longer windows add CPU (about the window
// per isolated message) and little speed.  Table in src/bench/net_bench.h.
inline constexpr uint32_t kDefaultPollWindowUs = 50;

// The default adaptive poll window while the Worker's owner awaits replies
// (Worker::SetAwaitingReplies): 0, off (the base window throughout).  A
// traversal that crosses memory nodes waits for two or more of their
// wake-ups, which outlasts kDefaultPollWindowUs, so a client waiting for
// one sleeps often; a longer window while awaiting (300 us) cut that, but
// on the 2-core test machine the polling client takes the core from the
// memory nodes of a long multi-node scan (wiredtiger, 2 nodes: p50 +45 %)
// while btrdb gained only under heavy load, where rpc gained as much.
// Figures in docs/evaluation.md (issue 14, the client's wait).
inline constexpr uint32_t kDefaultAwaitingPollWindowUs = 0;
// Adaptive polling spins this long after the last activity before it
// yields the core between polls (yield_while_polling): long enough for an
// answer over shared memory, short enough not to starve a peer queued
// behind the poller on a machine with fewer cores than processes.
inline constexpr uint32_t kSpinBeforeYieldUs = 5;
// Worker::Create rejects a longer awaiting window: polling is bounded.
inline constexpr uint32_t kMaxAwaitingPollWindowUs = 10000;

// The machine's demand for CPUs at one instant, as the idle-core polling
// rule (WorkerOptions::poll_when_core_idle) sees it.
struct CpuDemand {
  // Threads running or queued for a CPU, machine-wide, the caller included
  // (the fourth field of /proc/loadavg).
  uint32_t runnable = 0;
  // CPUs this process may run on (sched_getaffinity).
  uint32_t cores = 1;
  // The calling thread's involuntary context switches so far (getrusage
  // RUSAGE_THREAD, ru_nivcsw): preemptions, and sched_yield() calls that
  // let another thread run.
  uint64_t preemptions = 0;
};

// Reads CpuDemand for the calling thread: three cheap system calls (the
// /proc/loadavg descriptor stays open).  Never fails: if /proc/loadavg
// cannot be read, `runnable` is UINT32_MAX (a busy machine), so the rule
// sleeps instead of polling.  Thread-safe.
CpuDemand ReadCpuDemand();

// While a kAdaptive wait polls under the idle-core rule it reads CpuDemand
// again this often at most (not per poll: a read costs a few microseconds)...
inline constexpr uint32_t kCpuDemandRecheckUs = 10;
// ... and only after kCpuDemandReadSpacing times what the last read took, so
// that reads are at most about a tenth of the polling time whatever the
// machine (a read took 1.8 us on the development host and 3-13 us on a
// loaded VM, where one read per 10 us was a third of a memory node's
// polling, and a request that arrived during a read waited for it).
inline constexpr uint32_t kCpuDemandReadSpacing = 9;

// TEST HOOK, not for production: faults injected at the transport boundary
// so that the layers above (retransmission, duplicate suppression) can be
// tested against a real cluster.  Applies to this Worker's outgoing active
// messages (Send) whose id is in `message_ids` (every id if empty); pulse's
// own connection messages are never touched, and one-sided operations only
// with `one_sided` (then Get/Put take RmaPath::kMessages, whose requests and
// replies are faulted like messages, and retransmit).  Per message, in
// this order: with probability `loss` it is dropped (Send still returns
// OK); with probability `duplicate` it is sent twice; with probability
// `reorder` it is held back and sent after the next message sent on the same
// endpoint, or, if none comes, by the worker's progress loop once `hold_us`
// have passed (the wait functions wake for it: nothing sleeps or spins
// because of it).  So with faults on, per-endpoint order is not kept.
// Decisions come from a pseudo-random generator seeded with `seed` and the
// Worker's name, so a run is repeatable for a given message sequence.
// Counted in Counters::faults_*.
struct FaultInjection {
  double loss = 0;
  double duplicate = 0;
  double reorder = 0;
  uint32_t hold_us = 2000;
  uint64_t seed = 1;
  std::vector<uint16_t> message_ids;  // empty: every message id
  bool one_sided = false;             // also Get/Put requests and replies

  bool enabled() const { return loss > 0 || duplicate > 0 || reorder > 0; }
  // Parses "loss=0.05,dup=0.02,reorder=0.05,hold_us=2000,seed=7,ids=1+2,rma=1"
  // (every key optional; probabilities in [0, 1]; rma 0 or 1).  Errors: InvalidArgument
  // naming the bad key or value.
  static Result<FaultInjection> Parse(const std::string& spec);
  // The spec Parse() accepts for these settings.
  std::string ToString() const;
};

// The environment variable a Worker reads its FaultInjection from when
// WorkerOptions::faults is unset (child processes inherit it, so a test can
// inject faults into the switch and memory nodes it starts).
inline constexpr const char* kFaultsEnvironmentVariable = "PULSE_NET_FAULTS";

// The environment variable a Worker reads its cluster secret from (a key
// file, see ReadKeyFile) when WorkerOptions::credentials is unset.  `pulse
// cluster up` sets it for the nodes it starts; the test rack for itself.
inline constexpr const char* kSecretFileEnvironmentVariable = "PULSE_CLUSTER_SECRET_FILE";

// Size of a cluster secret and of a tenant key.
inline constexpr size_t kKeySize = 32;

// What a Worker proves when it connects, and what its listener accepts.
//
// A Worker with a cluster secret acts for the cluster (a node, or an
// administrator's tool): it connects as the cluster unless `tenant` is set,
// and its listener accepts a peer that proves the cluster secret (a
// cluster peer) or the key of the tenant it names (a tenant peer, see
// DeriveTenantKey), and nobody else.  A tenant's client holds only its
// tenant key (`tenant` and `tenant_key`), so it can prove that tenant and no
// other.  A Worker without credentials connects "open".  A Worker without
// a cluster secret may listen only with WorkerOptions::insecure, and its
// listener then accepts only open peers: for tests and `--insecure` nodes;
// every node `pulse cluster up` starts has the secret.  Keys are compared
// in constant time and never sent.
struct Credentials {
  std::vector<uint8_t> cluster_secret;  // kKeySize bytes, or empty
  // Connect as this tenant, proving `tenant_key`, or if that is empty, the
  // key DeriveTenantKey(cluster_secret, tenant).
  std::optional<uint32_t> tenant;
  std::vector<uint8_t> tenant_key;
};

// Who the peer of an endpoint proved to be in the handshake.
enum class PeerKind {
  kOpen,     // no credentials (only between Workers without a secret)
  kCluster,  // knows the cluster secret: a node or an administrator
  kTenant,   // knows the key of `tenant` only
};
struct PeerIdentity {
  PeerKind kind = PeerKind::kOpen;
  uint32_t tenant = 0;  // kTenant only
};

// The key of tenant `tenant`: HMAC-SHA256(secret, "pulse-tenant-v1" |
// tenant as 4 bytes little-endian).  Whoever holds the cluster secret can
// derive every tenant's key; a tenant's key reveals neither the secret nor
// another tenant's key.
std::vector<uint8_t> DeriveTenantKey(std::span<const uint8_t> cluster_secret, uint32_t tenant);

// Reads a key file: exactly kKeySize bytes, a regular file that only its
// owner may read or write.  Errors: NotFound, InvalidArgument naming the
// path and what is wrong (size, type, permissions), IoError.
Result<std::vector<uint8_t>> ReadKeyFile(const std::string& path);
// Writes `key` to a new file at `path` with mode 0600 (fails if it exists:
// AlreadyExists).  Errors: IoError naming the path.
Status WriteKeyFile(const std::string& path, std::span<const uint8_t> key);
// kKeySize random bytes from the system's generator.  Errors: Internal.
Result<std::vector<uint8_t>> NewRandomKey();

struct WorkerOptions {
  PollMode poll_mode = PollMode::kAdaptive;
  // kAdaptive only: how long to keep polling after the last traffic.
  uint32_t poll_window_us = kDefaultPollWindowUs;
  // kAdaptive only: the window, also counted from the last traffic, while
  // the owner awaits replies (SetAwaitingReplies(true)); the longer of the
  // two applies then.  0: no longer window.  At most
  // kMaxAwaitingPollWindowUs (Create: kInvalidArgument).
  uint32_t awaiting_poll_window_us = kDefaultAwaitingPollWindowUs;
  // kAdaptive only: after 5 us of polling, call sched_yield() between
  // polls, so that a peer queued behind this thread on the same core (more
  // runnable threads than cores, as on a small shared machine) can run and
  // answer; without it a reply can wait for the whole window.
  bool yield_while_polling = true;
  // kAdaptive only: the idle-core rule.  Poll within the window only while
  // polling costs nobody: at most one thread of the machine waits for a
  // CPU (CpuDemand::runnable <= cores + 1, this thread included: the peer
  // of a hop, which gets the core at this thread's next yield) and this
  // thread has not been switched out involuntarily since the window began
  // (a preemption, or a yield that let another thread run).  A busy
  // verdict stands for 200 us without reading again.  Read when a wait
  // enters its window and again while it polls (kCpuDemandRecheckUs,
  // kCpuDemandReadSpacing); when the rule fails the wait sleeps at once
  // (Counters::polls_cut).  The window still ends poll_window_us after the
  // last traffic, so an idle worker sleeps either way.  On a machine whose processes outnumber its
  // cores (the 2-core local cluster) this keeps the window's latency gain
  // when the machine is quiet and avoids stealing the core the next hop
  // needs when it is loaded (docs/cluster.md, "The poll-window knob").
  bool poll_when_core_idle = false;
  // Test hook: where the idle-core rule reads CpuDemand.  Empty:
  // ReadCpuDemand().  Called on the worker thread only.
  std::function<CpuDemand()> cpu_demand;
  // Longest single sleep on the event fd before the worker polls once more
  // anyway (a safety net; UCX's keepalive also needs an occasional poll).
  uint32_t max_sleep_us = 100000;
  // UCX transport list ("tcp", "posix,sysv,cma,tcp", ...); empty: UCX_TLS
  // from the environment, or UCX's own choice.
  std::string transports;
  // Further UCX context settings, name without the "UCX_" prefix, e.g.
  // {"RNDV_THRESH", "16K"}, applied after `transports`.  Only UCP context
  // settings are accepted (the UCX_* names `ucx_info -c` lists before the
  // per-transport ones); a transport setting such as POSIX_ERROR_HANDLING
  // must come from the environment (kInvalidArgument otherwise).
  std::vector<std::pair<std::string, std::string>> ucx_config;
  // How Get/Put are carried (decided per endpoint at ImportRkey).
  RmaPath rma_path = RmaPath::kAuto;
  // RmaPath::kMessages: a Get/Put request not answered within this many
  // microseconds is sent again (same request id; the interval doubles up to
  // 1 s, within the operation's timeout).  Reads are idempotent; the peer
  // applies a re-sent or duplicated write once.  0: never re-send.
  uint32_t rma_retransmit_us = 50000;
  // Name used in log and error messages.
  std::string name = "pulse";
  // Test hook (see FaultInjection).  Unset: from $PULSE_NET_FAULTS if set
  // (Create fails with kInvalidArgument if it does not parse), else none.
  std::optional<FaultInjection> faults;
  // What this Worker proves and accepts (see Credentials).  Unset: the
  // cluster secret in the file $PULSE_CLUSTER_SECRET_FILE names if set
  // (Create fails if it cannot be read), else none.
  std::optional<Credentials> credentials;
  // Allow Listen() without a cluster secret: the listener then runs "open"
  // (accepts anyone who also has no credentials; see Credentials).  Off by
  // default, so that a node that lost its secret fails to start instead of
  // admitting strangers.  Has no effect on a Worker that has the secret.
  bool insecure = false;
  // A peer connecting to our listener must complete the handshake within
  // this time, or its connection is closed.
  uint32_t handshake_timeout_ms = 5000;
  // At most this many connections to our listener may be in the handshake
  // at once; a new one beyond that closes the oldest.
  uint32_t max_pending_handshakes = 128;
};

// Event and traffic counts of one Worker since creation.  Only the worker
// thread updates them.
struct Counters {
  uint64_t messages_sent = 0;      // active messages accepted by Send()
  uint64_t bytes_sent = 0;         // their payload bytes
  uint64_t messages_received = 0;  // active messages delivered to a handler
  uint64_t bytes_received = 0;
  uint64_t messages_dropped = 0;   // no handler, unknown endpoint or malformed
  uint64_t rma_ops = 0;            // Get/Put operations started
  uint64_t rma_bytes = 0;
  uint64_t poll_iterations = 0;    // ucp_worker_progress() calls
  uint64_t sleeps = 0;             // waits on the event fd
  uint64_t wakeups = 0;            // ... that ended because the fd fired
  uint64_t sleeps_skipped = 0;     // armed, then RunUntil's before_sleep said no
  // Waits that polled with awaiting_poll_window_us (the owner awaited
  // replies and that window was the longer).
  uint64_t awaiting_polls = 0;
  // The idle-core rule (WorkerOptions::poll_when_core_idle): CpuDemand
  // reads, and windows it cut short or skipped (a thread waited for a CPU,
  // or this one was preempted), after which the wait slept.
  uint64_t cpu_demand_reads = 0;
  uint64_t polls_cut = 0;
  uint64_t wake_calls = 0;         // Wake() requests seen by the worker thread
  uint64_t endpoints_failed = 0;   // peers that died, closed or timed out
  // FaultInjection (a test hook): messages dropped, sent twice, held back.
  uint64_t faults_dropped = 0;
  uint64_t faults_duplicated = 0;
  uint64_t faults_reordered = 0;
  // RmaPath::kMessages: requests this worker sent again (no answer in
  // time), and write requests it received again and did not re-apply.
  uint64_t rma_retransmissions = 0;
  uint64_t rma_duplicates = 0;
};

// Called for each active message, on the worker thread, with the endpoint
// it came from.  `payload` is valid only during the call.
using MessageHandler = std::function<void(EndpointId from, std::span<const uint8_t> payload)>;
// Called once when an endpoint fails: the peer died, closed its side, or a
// one-sided operation on it timed out.  `why` is non-OK (kUnavailable or
// kTimeout).  The id stays known (sends return kUnavailable) until Close().
using DisconnectHandler = std::function<void(EndpointId ep, const Status& why)>;
// Called when a peer's Connect() to our listener has completed.
using AcceptHandler = std::function<void(EndpointId ep, const std::string& peer_address)>;
// Completion of an asynchronous operation.
using CompletionFn = std::function<void(const Status&)>;

class Worker;
struct RegionTable;

// A local memory range registered for remote access.  Movable, not
// copyable; unregisters on destruction, which must happen before the Worker
// that registered it is destroyed.  The memory itself stays the caller's,
// except for Worker::AllocateMemory's, which the region owns (freed by its
// destruction).  Thread-compatible.
class MemoryRegion {
 public:
  MemoryRegion() = default;
  MemoryRegion(MemoryRegion&& other) noexcept;
  MemoryRegion& operator=(MemoryRegion&& other) noexcept;
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;
  ~MemoryRegion();

  bool valid() const { return memh_ != nullptr; }
  void* data() const { return addr_; }
  size_t size() const { return length_; }
  // The address a peer passes to Get/Put for byte 0 of the region.
  uint64_t remote_address() const { return reinterpret_cast<uint64_t>(addr_); }
  // Packed remote key: send these bytes to a peer, which imports them with
  // Worker::ImportRkey().
  std::span<const uint8_t> rkey() const { return rkey_; }

 private:
  friend class Worker;
  void Release();
  std::shared_ptr<RegionTable> registry_;  // the Worker's table of regions
  uint64_t id_ = 0;
  ucp_context* context_ = nullptr;
  ucp_mem* memh_ = nullptr;
  void* addr_ = nullptr;
  size_t length_ = 0;
  std::vector<uint8_t> rkey_;
};

// A peer's remote key, imported for one endpoint.  Movable, not copyable;
// must be destroyed before the Worker.  Thread-compatible.
class RemoteKey {
 public:
  RemoteKey() = default;
  RemoteKey(RemoteKey&& other) noexcept;
  RemoteKey& operator=(RemoteKey&& other) noexcept;
  RemoteKey(const RemoteKey&) = delete;
  RemoteKey& operator=(const RemoteKey&) = delete;
  ~RemoteKey();

  bool valid() const { return ep_ != kInvalidEndpoint; }
  // The endpoint the key was imported for; Get/Put go to that peer.
  EndpointId endpoint() const { return ep_; }
  // The peer's region: [base, base + size).
  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  // True if Get/Put with this key use UCX RMA, false for pulse messages.
  bool uses_ucx_rma() const { return rkey_ != nullptr; }
  // Where the peer's region [base, base + size) is mapped into this
  // process, or nullptr: non-null only for memory the peer allocated with
  // Worker::AllocateMemory on this host, which UCX maps here (ucp_rkey_ptr)
  // and which a Put with this key writes with plain stores anyway.  Plain
  // loads and stores through it are then the same one-sided access without
  // a request per operation (the ring path, docs/ring.md).  Valid while
  // the key lives; the caller keeps within [base, base + size).
  uint8_t* mapped() const { return mapped_; }

 private:
  friend class Worker;
  ucp_rkey* rkey_ = nullptr;
  uint8_t* mapped_ = nullptr;
  EndpointId ep_ = kInvalidEndpoint;
  uint64_t region_id_ = 0;
  uint64_t base_ = 0;
  uint64_t size_ = 0;
};

// One UCP context + worker.  Not thread-safe: one thread at a time drives
// it (create it anywhere, then use it from one thread); only Wake() may be
// called from any thread.  Handlers run on the driving thread inside
// Progress(), WaitForEvent() or RunUntil() (and so inside any blocking call);
// a handler may call Send(), the *Async operations, Close() and the Set*
// functions, but not a blocking call (those return kInvalidArgument there).
class Worker {
 public:
  // Creates the UCP context and worker.  Errors: kInvalidArgument (a
  // `ucx_config` name that is not a UCP context setting), kIoError or
  // kInternal if UCX cannot be initialised.
  static Result<std::unique_ptr<Worker>> Create(const WorkerOptions& options = {});
  // Closes every endpoint (flushing for at most a short while, then by
  // force), stops listening and releases UCX.  Pending asynchronous
  // operations complete with kUnavailable (their functions must not call
  // the Worker); the disconnect handler is not called; messages that
  // arrive meanwhile are dropped.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // ---- connections ------------------------------------------------------

  // Listens on host:port (port 0: an ephemeral port) and returns the bound
  // port.  Each peer that connects and passes the handshake (see
  // Credentials) becomes an endpoint; see SetAcceptHandler().  The
  // listener is served by the thread that drives the Worker, inside
  // Progress(), WaitForEvent() and every blocking call.  One listener per
  // Worker.  Errors: kFailedPrecondition (no cluster secret and not
  // WorkerOptions::insecure), kInvalidArgument (bad host, already
  // listening), kIoError (address in use, ...).
  Result<uint16_t> Listen(const std::string& host, uint16_t port);
  // True if this Worker has no cluster secret: its listener, if any, runs
  // open (WorkerOptions::insecure) and admits any peer without
  // credentials.  Reported as "insecure" in the nodes' `stats`.
  bool open() const;
  // Stops accepting connections; existing endpoints stay.
  void StopListening();

  // Connects to a peer's listener, runs the handshake (see Credentials) and
  // waits (progressing, so this Worker's own listener keeps serving) until
  // the peer has accepted, at most `timeout`.  Errors: kUnavailable
  // (refused, unreachable), kPermissionDenied (the peer refused our
  // credentials, or did not prove its own), kTimeout, kInvalidArgument (bad
  // address, a peer that does not speak the handshake, or called from a
  // handler).
  Result<EndpointId> Connect(const std::string& host, uint16_t port, Duration timeout);

  // Closes an endpoint: flushes outstanding sends for at most `timeout`,
  // then closes by force.  The peer sees a disconnect.  The id becomes
  // unknown.  Never calls the disconnect handler.  Errors: kNotFound.  From a
  // handler the close is started but not waited for.
  Status Close(EndpointId ep, Duration timeout = std::chrono::milliseconds(500));

  // True if `ep` is known and has not failed.
  bool IsConnected(EndpointId ep) const;

  // Who the peer of `ep` proved to be in the handshake (for an endpoint we
  // connected: the listener, always kCluster or kOpen).  Errors: kNotFound.
  Result<PeerIdentity> PeerOf(EndpointId ep) const;

  // Handlers (replace any previous one; an empty function removes it).
  void SetAcceptHandler(AcceptHandler handler);
  void SetDisconnectHandler(DisconnectHandler handler);

  // ---- active messages --------------------------------------------------

  // Sets the handler for message id `msg_id`.  Messages that arrive for an
  // id without a handler are dropped (counted in messages_dropped).
  void SetHandler(uint16_t msg_id, MessageHandler handler);

  // Sends `payload` to the peer's handler for `msg_id`.  Asynchronous: the
  // bytes are copied (or sent at once) before Send returns, so the caller
  // may reuse them.  Large payloads go by rendezvous.  Messages on one
  // endpoint are delivered in the order sent (unless WorkerOptions::faults
  // reorders them).  Errors: kNotFound (unknown
  // id), kUnavailable (the endpoint has failed).  A failure after Send
  // returns is reported by the disconnect handler.
  Status Send(EndpointId ep, uint16_t msg_id, std::span<const uint8_t> payload);
  // As above, taking ownership of `payload` instead of copying it.
  Status Send(EndpointId ep, uint16_t msg_id, std::vector<uint8_t>&& payload);

  // ---- one-sided access -------------------------------------------------

  // Registers [addr, addr+length) for remote read and write by peers that
  // hold its rkey.  Requests that arrive as messages (RmaPath::kMessages) are
  // served by this worker's thread inside its progress and checked against
  // the region's bounds.  Errors: kInvalidArgument (null or empty), kIoError.
  Result<MemoryRegion> RegisterMemory(void* addr, size_t length);
  // Allocates `length` zeroed bytes with UCX (ucp_mem_map with
  // UCP_MEM_MAP_ALLOCATE) and registers them as above; the region owns the
  // memory (data() is its address).  On one host UCX puts this memory in a
  // shared-memory segment that a peer's RmaPath::kAuto maps directly, so
  // Get/Put with its key are one-sided there (RemoteKey::uses_ucx_rma),
  // which UCX 1.13 does not offer for RegisterMemory'd memory over shared
  // memory.  Errors: kInvalidArgument (zero length), kIoError and the like
  // from UCX (no memory).
  Result<MemoryRegion> AllocateMemory(size_t length);
  // Unpacks a peer's packed rkey (MemoryRegion::rkey() on its side) for use
  // on endpoint `ep`.  With RmaPath::kAuto the key uses UCX RMA if the
  // endpoint has an offloaded RMA lane or UCX maps the peer's region here
  // (AllocateMemory on the same host), else pulse's messages.  Errors: kNotFound, kUnavailable, kInvalidArgument
  // (bytes that are not an rkey).
  Result<RemoteKey> ImportRkey(EndpointId ep, std::span<const uint8_t> packed);

  // Copies `length` bytes at the peer's `remote_addr` into `local`, waiting
  // at most `timeout`.  [remote_addr, remote_addr + length) must lie inside
  // the key's region.  On kTimeout the endpoint is failed (closed by force,
  // disconnect handler called with kTimeout) so that nothing touches `local`
  // after Get returns.  Errors: kNotFound, kUnavailable, kTimeout,
  // kInvalidArgument, kOutOfRange (outside the region), kPermissionDenied
  // (the peer no longer has the region registered).
  Status Get(const RemoteKey& rkey, uint64_t remote_addr, void* local, size_t length,
             Duration timeout);
  // Writes `length` bytes from `local` to the peer's `remote_addr` and waits
  // until they are visible at the peer.  Errors and timeout as for Get().
  Status Put(const RemoteKey& rkey, uint64_t remote_addr, const void* local, size_t length,
             Duration timeout);
  // Asynchronous forms.  `local` must stay valid until `done` runs; `done`
  // runs exactly once on the worker thread (also with an error when the
  // endpoint fails or the Worker is destroyed), never inside the call
  // itself; if the call returns non-OK, `done` never runs.  PutAsync
  // completes when `local` may be reused (with RmaPath kMessages: when the
  // peer has the data); call Flush() for remote visibility.  No order is
  // kept between operations in flight: Flush() between dependent ones.
  Status GetAsync(const RemoteKey& rkey, uint64_t remote_addr, void* local, size_t length,
                  CompletionFn done);
  Status PutAsync(const RemoteKey& rkey, uint64_t remote_addr, const void* local,
                  size_t length, CompletionFn done);
  // Waits until every operation issued on `ep` (sends, Get/Put) is
  // complete at the peer.  Errors: kNotFound, kUnavailable, kTimeout.
  Status Flush(EndpointId ep, Duration timeout);

  // ---- driving ----------------------------------------------------------

  // Makes progress without blocking: runs handlers and completions that are
  // ready.  Returns true if anything happened.
  bool Progress();
  // Waits for something to do, per the poll mode, until `deadline`; may run
  // handlers.  Returns OK after an event or a Wake() (spurious returns are
  // possible), kTimeout when the deadline passed first.
  Status WaitForEvent(Clock::time_point deadline);
  // Progresses and waits until `done()` is true (OK) or `timeout` passed
  // (kTimeout).  `done` is evaluated on this thread between events and
  // between the polls of an adaptive window (so a condition that changes
  // without an event, such as a one-sided write landing, ends the wait
  // while polling).  `before_sleep`, if given, runs each time the worker
  // is armed and about to sleep: the place to announce "wake me" to a peer
  // that writes one-sidedly (anything it causes raises an event now);
  // returning true skips that sleep.
  Status RunUntil(const std::function<bool()>& done, Duration timeout,
                  const std::function<bool()>& before_sleep = {});
  // Breaks a WaitForEvent()/RunUntil() sleep, now or, if none is under way,
  // the next one.  Thread-safe; async-signal-unsafe.
  void Wake();

  // ---- introspection ----------------------------------------------------

  const Counters& counters() const;
  const WorkerOptions& options() const;
  // Changes the poll mode and window from now on.
  void SetPollMode(PollMode mode, uint32_t poll_window_us);
  // Whether the owner has sent requests whose replies it awaits: while
  // true, kAdaptive waits poll for awaiting_poll_window_us after the last
  // traffic instead of poll_window_us (the longer of the two).  Not
  // awaiting (the default) keeps the idle rule: sleep once poll_window_us
  // has passed.  Worker thread only (EventLoop sets it before each wait).
  void SetAwaitingReplies(bool awaiting);
  // Traffic the owner moves outside this worker's messages (entries and
  // answers of a one-sided ring) happened now: the adaptive window restarts
  // from it, as after a message.  Worker thread only.
  void NoteActivity();
  // Number of endpoints that are known (connected or failed, not closed).
  size_t endpoint_count() const;
  // Messages received and not yet delivered, over all endpoints: held in
  // order behind an earlier message whose rendezvous is still arriving, or
  // until the endpoint's handshake ends.  Worker thread only.
  size_t held_inbound() const;
  // UCX's description of the endpoint's transports and thresholds
  // (ucp_ep_print_info).  Errors: kNotFound, kUnavailable.
  Result<std::string> DescribeEndpoint(EndpointId ep) const;
  // Whether Get/Put on `ep` use UCX's own one-sided operations, which need
  // no CPU at the peer (RemoteKey::uses_ucx_rma for keys imported on it),
  // rather than pulse's messages.  Errors: kNotFound, kUnavailable.
  Result<bool> UsesUcxRma(EndpointId ep) const;

  struct Impl;

 private:
  explicit Worker(std::unique_ptr<Impl> impl);
  Status StartRma(bool is_get, const RemoteKey& rkey, uint64_t remote_addr, void* local,
                  size_t length, CompletionFn done);
  Status WaitForRma(bool is_get, const RemoteKey& rkey, uint64_t remote_addr, void* local,
                    size_t length, Duration timeout);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pulse::net
