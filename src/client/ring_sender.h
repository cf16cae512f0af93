// RingSender: the client's side of the ring request path (issue 15;
// docs/ring.md).  It sits beneath the traversal state machine
// (TraversalTracker): the client's TraversalPath offers each request to
// TrySend first, which posts it into the ring of the memory node that owns
// its cur_ptr, in the same encoding as a kAmTraversal message; answers
// taken from the ring are handed to the tracker as if the switch had
// delivered them.  So re-sends, timeouts and every status keep their
// meaning, and a request the ring cannot take (no ring, no free slot, too
// large) goes through the switch as before.
//
// Rings are opened at Open() for every memory node connected then (per
// ClientOptions::request_path); a node whose connection fails loses its
// ring and is served through the switch from then on.
//
// Thread-safety: none; it belongs to its Client's thread.  Destroy it
// before the Worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "client/connections.h"
#include "client/event_loop.h"
#include "net/ring_client.h"
#include "pulse/client.h"
#include "pulse/protocol.h"

namespace pulse {

// The environment variable that overrides ClientOptions::request_path.
inline constexpr const char* kRequestPathEnvironmentVariable = "PULSE_REQUEST_PATH";
// options.request_path, or what $PULSE_REQUEST_PATH says (auto, ring, am).
// Errors: InvalidArgument naming a value that is none of those.
Result<RequestPath> EffectiveRequestPath(const ClientOptions& options);
inline constexpr const char* kRingLayoutEnvironmentVariable = "PULSE_RING_LAYOUT";
// ClientOptions::ring_layout, or what PULSE_RING_LAYOUT says (slots,
// double).  Errors: InvalidArgument naming the variable's bad value.
Result<RingLayout> EffectiveRingLayout(const ClientOptions& options);

// When a client with ring entries in flight looks at its rings (the idle
// rule of issue 15, docs/ring.md "Client waiting").  Answers written
// one-sidedly raise no event, so the client polls: continuously for
// kWindow after the last progress (an entry posted or an answer taken),
// then at intervals that double from kFirstInterval up to kMaxInterval,
// blocking in the client's normal wait in between.  Off schedule the rings
// are polled whenever the wait wakes and a doorbell shows answers
// (RingClient::has_responses) or the Worker woke from sleep (traffic came:
// where puts are carried by messages, the answers' puts); a doorbell that
// moved counts as progress even before its entries are complete.  Pure arithmetic on the times it is given,
// so tests drive it with a fake clock.
//
// Thread-safety: none.
class RingPollSchedule {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  static constexpr std::chrono::microseconds kWindow{200};
  static constexpr std::chrono::microseconds kFirstInterval{200};
  static constexpr std::chrono::microseconds kMaxInterval{5000};

  // An entry was posted or an answer taken at `now`: poll again at once.
  void OnProgress(time_point now);
  // The rings were polled at `now` and gave nothing.
  void OnIdlePoll(time_point now);
  // When the rings should be polled next (with entries in flight).
  time_point next_poll() const { return next_; }
  bool Due(time_point now) const { return now >= next_; }

 private:
  time_point last_progress_{};
  time_point next_{};
  std::chrono::microseconds interval_ = kFirstInterval;
};

class RingSender final : public EventSource {
 public:
  using DeliverFn = std::function<void(std::span<const uint8_t> message)>;
  // `connections` and `counters` must outlive the sender; `deliver` gets
  // each answer (an encoded TraversalMessage).
  RingSender(Connections* connections, ClientCounters* counters, DeliverFn deliver);
  ~RingSender() override;

  // Opens a ring with every connected memory node, per `path`; a node that
  // has none (kAuto on a transport without one-sided puts, an old node, a
  // refusal) keeps to messages, and PathOf says why.  Not from inside a
  // Worker handler.
  void Open(RequestPath path, RingLayout layout, uint32_t slots, uint32_t slot_bytes);
  // Posts `m` into the ring of its node: true if posted (then it must not
  // be sent otherwise), false if it goes through the switch.
  bool TrySend(const TraversalMessage& m);
  // Connection `ep` failed: its ring is dropped.
  void OnDisconnect(net::EndpointId ep);
  // "ring", or "am: <why not ring>", for memory node `node`.
  std::string PathOf(uint32_t node) const;
  size_t rings() const { return rings_.size(); }
  // How many times RunReady looked at the rings (each ring's Poll), for
  // tests and stats: bounded while the memory node stalls.
  uint64_t ring_polls() const { return ring_polls_; }
  // The rings' writes into their nodes' memory done as plain stores
  // (RingClientCounters::stores, rings since dropped included): the
  // client's one-sided operations that net::Counters::rma_ops misses.
  uint64_t ring_stores() const;

  // EventSource: answers are taken in RunReady; while entries are in
  // flight the next deadline is the schedule's next poll (RingPollSchedule:
  // polling for its window after progress, then blocking waits with
  // doubling timeouts), so an idle client with entries in flight does not
  // spin.
  void Service() override {}
  time_point NextDeadline() const override;
  bool RunReady() override;
  bool has_ready() const override;
  // Asks every node with entries of ours in flight to send one
  // kAmRingAnswered with its next doorbell (RingClient::PrepareToWait):
  // the client's wait then ends when the answers land, not at its next
  // scheduled poll.
  void BeforeWait() override;

 private:
  bool AnyInFlight() const;
  struct NodeRing {
    net::EndpointId ep = net::kInvalidEndpoint;
    std::unique_ptr<net::ring::RingClient> ring;
    uint32_t doorbell = 0;  // at the last poll
  };
  Connections* connections_;
  ClientCounters* counters_;
  DeliverFn deliver_;
  std::map<uint32_t, NodeRing> rings_;          // by node id
  std::map<uint32_t, std::string> no_ring_;     // by node id: why not
  RingPollSchedule schedule_;
  uint64_t ring_polls_ = 0;
  uint64_t dropped_ring_stores_ = 0;  // ring_stores() of the rings OnDisconnect dropped
  uint64_t wakeups_ = 0;  // the Worker's wake-ups from sleep at the last poll
};

}  // namespace pulse
