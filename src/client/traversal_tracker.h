// The client's traversal state machine: offloaded traversal requests in
// flight, what each answer means (done, continue, not local, unknown
// program, node unavailable, outcome unknown, faults), re-sends on silence
// (RequestTracker, RetryPolicy::Fixed(request_timeout, max_attempts)),
// riding out a restarting memory node, and completion callbacks.  It sends
// and learns about the cluster only through a TraversalPath, and reads time
// from a TrackerClock, so tests drive it with scripted answers and a fake
// clock without processes (tests/client/traversal_tracker_test.cc).
//
// Thread-safety: none; it belongs to its Client's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "client/event_loop.h"
#include "common/request_tracker.h"
#include "pulse/client.h"
#include "pulse/protocol.h"

namespace pulse {

// What the state machine needs from the rest of the client.
class TraversalPath {
 public:
  virtual ~TraversalPath() = default;
  // Sends `m` towards the switch.  An error means it was not sent (the
  // state machine retries it at its next timer check, or fails it).
  virtual Status SendToSwitch(const TraversalMessage& m) = 0;
  // Sends `m` the way the cluster routes traversals: straight to the memory
  // node owning m.cur_ptr (direct routing), else through the switch.
  // Errors as SendToSwitch.
  virtual Status Send(const TraversalMessage& m) { return SendToSwitch(m); }
  // The version of the routing table Send routes with (0: none).
  virtual uint32_t routing_version() const { return 0; }
  // A memory node redirected a request holding table version `seen`, newer
  // than routing_version(): ask the switch for its table (it comes back as
  // a push, adopted like any).  Asynchronous; nothing to wait for.
  virtual void RefreshTable(uint32_t seen) = 0;
  // The memory node owning far address addr, if any.
  virtual std::optional<uint32_t> NodeOf(uint64_t addr) const = 0;
  // Whether the switch connection is lost, and an attempt to get it back
  // (Unavailable naming why it failed).
  virtual bool switch_down() const = 0;
  virtual Status EnsureSwitch() = 0;
  // Whether memory node `node` is one the (restarted) switch did not list.
  virtual bool Unrouted(uint32_t node) const = 0;
  // This client's CPU node id (it changes when a restarted switch is rejoined).
  virtual uint32_t cpu_node() const = 0;
  // An offloaded traversal that STOREs ended: the memory nodes may have
  // written blocks this client caches.
  virtual void StoresDone() = 0;
};

class TraversalTracker final : public EventSource {
 public:
  using Callback = Client::TraverseCallback;

  // `options`, `path`, `counters` and `clock` must outlive the tracker.
  // `first_counter` starts the request-id counter (see Client's note on
  // why it is random).
  TraversalTracker(const ClientOptions* options, TraversalPath* path, ClientCounters* counters,
                   const TrackerClock* clock, uint64_t first_counter);

  // Sends an offloaded traversal of `program` from (cur_ptr, scratch),
  // `iterations` of them already run here; `done` runs in RunReady().
  void Start(const ProgramRef& program, uint64_t cur_ptr, std::vector<uint8_t> scratch, uint32_t iterations,
             const TraverseOptions& options, Callback done);
  // Sends a no-op to the owner of addr through the switch, not re-sent:
  // `done` gets a kDone result when it came back, Timeout after
  // request_timeout.  Errors (then `done` never runs): the send failed.
  Status StartPing(uint64_t addr, Callback done);
  // Queues `done` with a result reached without the network.
  void Post(Callback done, Result<TraversalResult> result);

  // A kAmTraversal message from the switch or (direct routing) a memory
  // node.  A redirect (kFlagRedirect: the node does not own the request's
  // cur_ptr) is re-sent through the switch, same id, nothing having run.
  void OnMessage(std::span<const uint8_t> payload);
  // The switch connection failed: every pending request is re-sent (once
  // the switch is back) or failed at the next CheckTimeouts.
  void OnSwitchLost() { tracker_.ExpireAll(); }
  // Re-sends or fails the requests whose time has come.
  void CheckTimeouts();
  size_t pending() const { return tracker_.size(); }

  // EventSource: timers are CheckTimeouts; callbacks run in RunReady.
  void Service() override { CheckTimeouts(); }
  time_point NextDeadline() const override { return tracker_.NextDeadline(); }
  bool RunReady() override { return tracker_.RunReady() > 0; }
  bool has_ready() const override { return tracker_.has_ready(); }
  bool awaiting_replies() const override { return !tracker_.empty(); }

 private:
  struct Pending {
    ProgramRef program;        // null: a no-op probe (Ping)
    TraversalMessage request;  // as last sent
    TraverseOptions options;
    TraversalResult result;    // issues / retransmissions so far
    // When the first "unavailable" answer came plus the ride-out time.
    TrackerClock::time_point unavailable_until{};
    // Critical-path accounting: the encoded size of the request as last
    // sent, and the bytes of the legs of earlier answers (re-issues).
    uint64_t sent_bytes = 0;
    uint64_t path_bytes = 0;
  };

  void SendRequest(uint64_t id, Pending& p, bool retransmission);
  void Resend(uint64_t id, Pending& p, ResendReason why);
  Status TimeoutStatus(uint64_t id, const Pending& p, uint32_t attempts);
  // A new attempt from the state in `from` under a fresh request id, for
  // answers that came back to the CPU node to be re-issued ("continue",
  // pulse-acc "not local"): no copy of that state travels on elsewhere.  (A
  // continuation that found its node without the code is resumed under its
  // own id instead: OnMessage.)
  void Reissue(uint64_t id, const TraversalMessage& from);
  // Keeps `id` pending for a re-send after a "node unavailable" answer
  // while its ride-out time lasts.  False: the caller gets Unavailable now.
  bool RideOutUnavailable(uint64_t id, Pending& p);
  // Adds the legs an answer travelled (request to `m`, each leg at the
  // `answer_bytes` of m) to p's path and numbers p's next request after it.
  static void CountAnswer(Pending& p, const TraversalMessage& m, size_t answer_bytes);
  uint64_t NextId();
  RetryPolicy policy() const;

  const ClientOptions* options_;
  TraversalPath* path_;
  ClientCounters* counters_;
  const TrackerClock* clock_;
  uint64_t next_counter_;
  std::set<std::pair<uint64_t, uint32_t>> known_programs_;  // (hash, node)
  RequestTracker<Pending, TraversalResult> tracker_;
};

}  // namespace pulse
