// Private state of pulse::net::Worker, shared by the src/net/*.cc files.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/request_tracker.h"
#include "net/handshake.h"
#include "pulse/net.h"

namespace pulse::net {

// UCX active-message ids used by pulse.  User message ids travel in our
// header, so the whole 16-bit user id space maps onto these two.
inline constexpr unsigned kUserAmId = 0x70;
inline constexpr unsigned kCtlAmId = 0x71;

// Header of every message: the receiver's endpoint id (so the receiver finds
// the connection without UCX's reply-endpoint footer) and the message id.
inline constexpr size_t kHeaderSize = 10;
struct WireHeader {
  uint64_t dest = 0;
  uint16_t msg_id = 0;
  void Encode(uint8_t out[kHeaderSize]) const {
    std::memcpy(out, &dest, 8);
    std::memcpy(out + 8, &msg_id, 2);
  }
  static bool Decode(const void* in, size_t length, WireHeader* out) {
    if (length != kHeaderSize) return false;
    std::memcpy(&out->dest, in, 8);
    std::memcpy(&out->msg_id, static_cast<const uint8_t*>(in) + 8, 2);
    return true;
  }
};

// Control message types (msg_id field of kCtlAmId messages).
enum CtlType : uint16_t {
  // 1 and 2 were UCX-level hello messages before the TCP handshake
  // (link.cc) replaced them.
  // RmaPath::kMessages (rma_sw.cc); payloads start with a u64 request id.
  kCtlReadReq = 3,    // id, region id, address, length
  kCtlReadRep = 4,    // id, u8 status, data
  kCtlWriteReq = 5,   // id, floor, region id, address, data
  kCtlWriteAck = 6,   // id, u8 status
};

// Registered regions of one Worker, shared with its MemoryRegions so that a
// region can remove itself.
struct RegionInfo {
  uint8_t* base = nullptr;
  size_t length = 0;
};
struct RegionTable {
  std::unordered_map<uint64_t, RegionInfo> regions;  // by random id (RegisterMemory)
};


// A received message held back to keep per-endpoint order while an earlier
// rendezvous message is still arriving.
struct Inbound {
  uint16_t msg_id = 0;
  std::unique_ptr<uint8_t[]> data;
  size_t length = 0;
  bool ready = false;    // data complete
  bool failed = false;   // rendezvous receive failed: drop
  bool discard = false;  // received only to release the sender; never delivered
  bool control = false;  // a kCtlAmId message (handled by pulse, not a user handler)
  void* rndv_desc = nullptr;
};

enum class EpState { kConnecting, kReady, kFailed };

struct Endpoint {
  EndpointId id = kInvalidEndpoint;
  ucp_ep_h ep = nullptr;
  EpState state = EpState::kConnecting;
  EndpointId remote_id = kInvalidEndpoint;  // the peer's id for this connection
  bool accepted = false;                     // created by our listener
  bool announced = false;                    // the user knows this id
  bool closing = false;                      // Close() under way: no handler
  int native_rma = -1;                       // UCX RMA lane usable: -1 unknown, 0, 1
  uint64_t sw_pending = 0;                   // kMessages Get/Put in flight
  // kMessages writes from the peer: request ids below rma_floor are done at
  // the peer; rma_applied holds the ids at or above it applied here, so a
  // re-sent or duplicated write is answered, not applied again.
  uint64_t rma_floor = 0;
  std::set<uint64_t> rma_applied;
  std::string peer;
  int link_fd = -1;        // the handshake's TCP connection (Link), kept open
  PeerIdentity identity;   // what the peer proved in the handshake
  Status failure;
  std::deque<std::shared_ptr<Inbound>> inbound;
  Worker::Impl* impl = nullptr;
};

// Completion record of one UCX request issued with a callback.
struct Op {
  enum Kind { kSend, kRecv, kRma, kFlush };
  Kind kind = kSend;
  Worker::Impl* impl = nullptr;
  EndpointId ep = kInvalidEndpoint;
  // kSend: owned header and payload.
  uint8_t header[kHeaderSize] = {};
  std::vector<uint8_t> payload;
  // kRecv: the held-back message being filled.
  std::shared_ptr<Inbound> inbound;
  // kRma/kFlush: either a waiter (blocking) or a completion function.
  CompletionFn done;
  bool blocking = false;
  bool finished = false;
  bool abandoned = false;  // the waiter gave up; the callback frees the op
  Status status;
  // kRma over RmaPath::kMessages.
  uint64_t sw_id = 0;
  bool is_get = false;
  void* local = nullptr;
  size_t length = 0;
  // The request as sent (header type and payload), kept to re-send it.
  uint16_t sw_type = 0;
  std::vector<uint8_t> sw_request;
};

// One TCP connection of pulse's handshake (link.cc), from accept/connect to
// the end of its endpoint.
struct Link {
  enum class Stage {
    kServerWantHello,
    kServerWantProof,
    kClientConnecting,   // TCP connect in progress
    kClientWantChallenge,
    kClientWantVerdict,
    kEstablished,        // handshake done: only its end is watched
    kClosing,            // refusal being sent, then closed
  };
  int fd = -1;
  Stage stage = Stage::kServerWantHello;
  std::string peer;                   // "host:port"
  std::vector<uint8_t> in;            // bytes of the message being read
  std::vector<uint8_t> out;           // bytes still to send
  Clock::time_point deadline{};       // the handshake must be done by then
  Clock::time_point accepted_at{};    // for evicting the oldest
  handshake::Hello hello;             // the connecting side's hello
  handshake::Nonce server_nonce{};
  std::vector<uint8_t> key;           // the key proofs use on this link
  EndpointId ep = kInvalidEndpoint;   // client: set at once; server: once accepted
};

// A message FaultInjection holds back (faults.cc).
struct HeldMessage {
  EndpointId ep = kInvalidEndpoint;
  uint16_t msg_id = 0;
  std::vector<uint8_t> payload;
  Clock::time_point release_at{};
  unsigned am_id = kUserAmId;  // kCtlAmId: a one-sided request or reply
};

struct Worker::Impl {
  WorkerOptions options;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  int efd = -1;
  // pulse's listener and handshakes (link.cc).
  int listen_fd = -1;
  std::unordered_map<int, std::unique_ptr<Link>> links;  // by fd
  std::vector<uint8_t> own_address;  // this worker's UCX address
  Credentials credentials;            // resolved at Create
  Clock::time_point next_link_check{};
  bool links_ready = false;           // ppoll saw a link fd ready
  Clock::time_point accept_paused_until{};  // out of descriptors: accept later

  std::unordered_map<EndpointId, std::unique_ptr<Endpoint>> eps;
  // Records of closed endpoints, kept until their UCX close has finished so
  // that a late UCX callback never sees freed memory.
  std::vector<std::unique_ptr<Endpoint>> graveyard;
  EndpointId next_id = 1;

  std::vector<std::shared_ptr<MessageHandler>> handlers;
  AcceptHandler on_accept;
  DisconnectHandler on_disconnect;

  std::shared_ptr<RegionTable> regions;
  // kMessages requests in flight by id: re-sent on silence (rma_sw.cc).
  RequestTracker<Op*, bool> sw_ops{&TrackerClock::Steady(),
                                   [this](uint64_t id, Op*& op, ResendReason) { ResendSwOp(id, op); }};
  uint64_t next_sw_id = 1;

  Counters counters;
  std::atomic<bool> wake_pending{false};
  Clock::time_point last_activity{};
  bool awaiting_replies = false;  // Worker::SetAwaitingReplies
  // The idle-core rule (wait.cc): until then a busy machine's verdict
  // stands, and windows sleep at once without reading CpuDemand again.
  Clock::time_point cpu_busy_until{};
  int callback_depth = 0;  // > 0 while a user handler runs
  // FaultInjection (faults.cc); `faults` is set iff enabled.
  std::optional<FaultInjection> faults;
  std::mt19937_64 fault_rng;
  std::deque<HeldMessage> held;  // in the order they were held
  bool destroying = false;

  std::vector<std::pair<EndpointId, std::shared_ptr<Inbound>>> rndv_to_start;
  std::vector<EndpointId> failed;  // failures to process after progress
  std::vector<void*> closing;      // ucp_ep_close_nbx requests in flight
  std::vector<ucp_ep_h> deferred_closes;  // Close() from a handler: close after progress
  // Completions to run at the next progress (never inside the issuing call).
  std::vector<std::pair<CompletionFn, Status>> deferred_completions;
  size_t inflight = 0;             // requests whose callback has not run

  // --- helpers (endpoint.cc) ---
  Endpoint* Find(EndpointId id);
  Endpoint* NewEndpoint(bool accepted);
  // Forgets an endpoint id (its UCX endpoint must be closed or closing).
  void Erase(EndpointId id);
  // Marks an endpoint failed; the rest (close, handler) happens in
  // ProcessFailures() outside UCX callbacks.
  void MarkFailed(Endpoint* e, Status why);
  void ProcessFailures();
  // Fails `e` at once (outside UCX callbacks): closes it by force and calls
  // the disconnect handler.
  void FailNow(Endpoint* e, Status why);
  void ForceClose(ucp_ep_h ep);
  // Starts a graceful close (flush, then disconnect) without waiting.
  void GracefulClose(ucp_ep_h ep);
  void ReapCloses();
  // --- the handshake and its TCP connections (link.cc) ---
  // Reads the credentials (options or environment) and the worker address.
  Status SetUpLinks();
  // Accepts, advances handshakes, notices ended links.  `force`: now, else
  // only when due (a syscall per call would slow the polling loop).
  bool ServiceLinks(bool force);
  // The fds a sleep must also wake for (listener and links).
  void AppendLinkFds(std::vector<struct pollfd>* fds) const;
  // The earliest handshake deadline (max() if none).
  Clock::time_point NextLinkDeadline() const;
  // Starts a handshake with host:port for endpoint `e`.
  Status StartConnect(Endpoint* e, const std::string& host, uint16_t port, Clock::time_point deadline);
  // Closes an endpoint's link (its peer sees the end).
  void CloseLink(Endpoint* e);
  void CloseAllLinks();
  // Creates the UCX endpoint of `e` to a peer's worker address.
  Status CreateUcpEndpoint(Endpoint* e, std::span<const uint8_t> address);
  std::vector<EndpointId> to_drain;  // became ready with messages held
  // --- active messages (am.cc) ---
  Status InstallAmHandlers();
  // Issues a send whose header and payload `op` owns; takes `op`.
  Status SubmitSend(Endpoint* e, unsigned am_id, Op* op, uint32_t flags);
  // Hands a message to its user handler, or to HandleControlData.
  void Deliver(EndpointId from, bool control, uint16_t msg_id, const uint8_t* data,
               size_t length);
  void DrainInbound(EndpointId id);
  void StartRndvReceives();
  // Sends a user message (or, with am_id kCtlAmId, a control message) now,
  // without faults (the body of Send).
  Status SendNow(Endpoint* e, uint16_t msg_id, std::vector<uint8_t>&& payload,
                 unsigned am_id = kUserAmId);
  // --- fault injection (faults.cc) ---
  // Reads options.faults or $PULSE_NET_FAULTS and seeds the generator.
  Status SetUpFaults();
  bool FaultsApply(uint16_t msg_id) const;
  // Send() under FaultInjection: drops, duplicates or holds the message
  // (am_id kCtlAmId: a one-sided request or reply, not counted as sent).
  Status SendWithFaults(Endpoint* e, uint16_t msg_id, std::vector<uint8_t>&& payload,
                        unsigned am_id = kUserAmId);
  // Sends the held messages of `ep` (every endpoint if kInvalidEndpoint)
  // whose time has come, or all of them if `all`.  True if any was sent.
  bool ReleaseHeld(EndpointId ep, bool all);
  // When the next held message is due (time_point::max() if none).
  Clock::time_point NextHeldRelease() const;
  // --- one-sided over messages (rma_sw.cc) ---
  // Whether Get/Put on `e` use UCX RMA (per options.rma_path).
  bool UseUcxRma(Endpoint* e);
  // Registers `region` (memh_ set) in the region table and packs its key.
  Result<MemoryRegion> FinishRegion(MemoryRegion region, void* addr, size_t length);
  // Issues a kMessages Get/Put for `op` (kind kRma, local/length/is_get set).
  Status StartSwRma(Endpoint* e, const RemoteKey& rkey, uint64_t addr, Op* op);
  // A kCtlAmId data message (read/write request or reply) from `from`.
  void HandleControlData(EndpointId from, uint16_t type, const uint8_t* data, size_t length);
  // Completes every kMessages op of `ep` with `why`.
  void FailSwOps(EndpointId ep, const Status& why);
  // Sends op's kMessages request (again), under FaultInjection if one_sided.
  Status SendSwRequest(Endpoint* e, Op* op);
  // Re-sends the kMessages requests whose answer is overdue.  True if any.
  bool RetransmitSwOps();
  // sw_ops' re-send of request `id`.
  void ResendSwOp(uint64_t id, Op* op);
  // When the next kMessages request is due to be re-sent (max() if none).
  Clock::time_point NextSwResend() const;
  // Whether one-sided requests and replies go through FaultInjection.
  bool FaultsOneSided() const { return faults && faults->one_sided; }
  // --- one-sided (rma.cc) ---
  // Issues op's Get/Put (is_get, local, length set) over pulse's messages or
  // UCX and counts it.  *pending: op completes later through its callback
  // (false: UCX completed it at once).  On error op is the caller's again.
  Status IssueRma(Endpoint* e, const RemoteKey& rkey, uint64_t remote_addr, Op* op,
                  bool no_immediate, bool* pending);
  // Starts a flush of `e` with a blocking-style Op (nullptr if it completed
  // at once or failed to start).
  Op* StartFlush(Endpoint* e, Status* immediate);
  // Runs `op` to completion (blocking ops, or async ones: runs `done`).
  void CompleteOp(Op* op, Status status);
  // Waits at most `grace` for blocking ops to finish; frees finished ones
  // and abandons the others (their callback frees them).
  void ReleaseOps(std::initializer_list<Op*> ops, Duration grace);
  // --- waiting (wait.cc) ---
  bool ProgressOnce();
  // `done` (may be empty) ends an adaptive window's polling early;
  // `before_sleep` (may be empty) runs once armed, true skipping the sleep.
  Status WaitOnce(Clock::time_point deadline, const std::function<bool()>& done = {},
                  const std::function<bool()>& before_sleep = {});
  Status RunUntil(const std::function<bool()>& done, Clock::time_point deadline,
                  const std::function<bool()>& before_sleep = {});
  Status SleepUntil(Clock::time_point deadline, const std::function<bool()>& before_sleep = {});
  void NoteActivity() { last_activity = Clock::now(); }
  // --- common ---
  Status CheckBlockingAllowed(const char* what) const;
};

// A deadline `d` from now, clamped so that huge timeouts do not overflow.
inline Clock::time_point DeadlineAfter(Duration d) {
  constexpr Duration kMax = std::chrono::hours(24 * 365);
  if (d > kMax) d = kMax;
  if (d < Duration::zero()) d = Duration::zero();
  return Clock::now() + d;
}

std::string MicrosText(Duration d);
// ucp_ep_print_info as a string.
std::string EndpointInfo(ucp_ep_h ep);

// UCX status -> pulse Status.
Status FromUcs(ucs_status_t status, const std::string& what);
// Releases a finished request of ours (callback side).
inline void FinishRequest(Worker::Impl* impl, void* request) {
  if (impl != nullptr && impl->inflight > 0) --impl->inflight;
  if (request != nullptr) ucp_request_free(request);
}

}  // namespace pulse::net
