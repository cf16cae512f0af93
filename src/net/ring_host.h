// RingHost: the memory node's side of the ring request path (seed 002,
// RAMBDA III-A..C; formats in ring_format.h, design in docs/ring.md).
//
// A client that opens a ring pair (kAmRingOpen, once per connection) gets
// a request ring of its own in this node's memory and one 4-byte tail (on
// a page of its own), each allocated by UCX (Worker::AllocateMemory, so
// that on one host the client writes them with plain stores) and
// registered on its own: the two keys it receives reach those bytes and
// nothing else of the node.  It then posts requests with one-sided puts (entry, then tail) and
// the node answers each in the same slot of the client's response ring,
// also with one-sided puts, followed by one status-block put per ring and
// batch (the response doorbell).  No message is received or sent per
// request on this path.
//
// Serving: Poll() scans the rings' tails (never the rings) for tails
// that moved, takes the complete entries behind them in order (at most
// `max_batch` per call: a torn entry, or one not written yet, stops that
// ring until it is complete), clears them, and hands each to the handler.
// A double-layer ring (Layout::kDoubleLayer) is served by its descriptors:
// each is taken in order, and its entry handed over once its bytes are
// complete, so an entry still on the way stops nothing behind it.
// The handler, or anyone later on the same thread, answers with Respond().
// An entry that cannot be right (its length does not fit the slot), or one
// still torn after `torn_timeout`, is answered with InvalidArgument in its
// slot and counted in `malformed`; the ring goes on.
//
// Idle: the owner's loop calls Poll() between network progress while
// MaySleep() says no; MaySleep() says yes once no entry has been taken for
// the poll window (adaptive, at most `poll_window_us`), after publishing a new sleep epoch into every client's
// status block (and one last scan).  A client with requests in flight that
// reads that epoch sends one kAmRingWake; its arrival wakes the owner's
// Worker and the node polls again.
//
// Lifetime of a ring: until Close(ep) (the owner calls it from its
// disconnect handler: a client that dies leaves nothing behind and stalls
// no other ring) or the RingHost's destruction.
//
// Thread-safety: none.  Everything runs on the thread that drives the
// Worker; the RingHost must be destroyed before the Worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "net/ring_format.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::net::ring {

struct RingHostOptions {
  // At most this many rings (ring indices) at once (an
  // open beyond that is refused with ResourceExhausted).
  uint32_t max_rings = 256;
  // The largest ring a client may ask for (slots * slot_bytes).
  uint64_t max_ring_bytes = 1ull << 20;
  // Keep polling at most this long after the last entry taken, then sleep
  // (see "Idle" above and docs/ring.md for why this length).  The window
  // in use adapts between min_poll_window_us and this: raised to twice a
  // gap that polling caught, or that ended a sleep (a wake-up, or an entry
  // a scan found first) if this window would have caught it; halved when a
  // sleep ends after a longer gap (its polling was wasted).  At most about
  // twice what one sleep and wake-up cost the node (~10 us of CPU on the
  // development host, docs/ring.md "Idle"): polling a longer gap costs more
  // CPU than the sleep it saves.
  uint32_t poll_window_us = 20;
  uint32_t min_poll_window_us = 5;
  // A torn entry still torn after this long is answered as malformed.
  uint32_t torn_timeout_us = 100000;
  // Entries taken per Poll() at most (RAMBDA's accelerator batch).
  uint32_t max_batch = 256;
};

struct RingHostCounters {
  uint64_t rings_opened = 0;
  uint64_t rings_closed = 0;
  uint64_t opens_refused = 0;
  uint64_t entries = 0;      // complete entries handed to the handler
  uint64_t malformed = 0;    // entries answered with InvalidArgument unseen
  uint64_t responses = 0;    // Respond() calls written
  uint64_t doorbells = 0;    // status-block puts
  uint64_t scans = 0;        // Poll() calls (scans of the tails)
  uint64_t empty_scans = 0;  // Poll() calls that took no entry
  uint64_t sleeps = 0;       // sleep epochs published
  uint64_t wakes = 0;        // kAmRingWake messages received
  uint64_t sleeps_ended = 0;  // sleeps ended, by a wake-up or by an entry found first
  uint64_t answered_wakes = 0;  // kAmRingAnswered messages sent (clients that may be blocked)
};

class RingHost {
 public:
  // One request taken from a ring.  `payload` is valid during the handler
  // call only.
  struct Request {
    uint32_t ring = 0;
    EndpointId ep = kInvalidEndpoint;  // the client's connection (its tenant: node::TenantOf)
    uint64_t seq = 0;
    std::span<const uint8_t> payload;
  };
  using Handler = std::function<void(const Request& request)>;

  // Installs the kAmRingOpen and kAmRingWake handlers on `worker` (which
  // must outlive the RingHost) and registers nothing yet.  Errors:
  // InvalidArgument naming a bad option.
  static Result<std::unique_ptr<RingHost>> Create(Worker* worker, const RingHostOptions& options,
                                                  Handler handler);
  // Unregisters every ring and removes the handlers; waits (progressing the
  // Worker, at most a second) for response puts still in flight.
  ~RingHost();
  RingHost(const RingHost&) = delete;
  RingHost& operator=(const RingHost&) = delete;

  // Answers entry `seq` of `ring`: `status` (its code travels) and, if OK,
  // `payload`; written into the client's response ring now, its doorbell at
  // the end of the next Poll().  Errors: NotFound (the ring is closed: the
  // answer has nobody to go to), FailedPrecondition (seq is not waiting for
  // an answer), InvalidArgument (the payload does not fit a slot), or what
  // the put returned (the client's connection failed).
  Status Respond(uint32_t ring, uint64_t seq, const Status& status, std::span<const uint8_t> payload);

  // Takes the complete entries behind moved tails and hands them to the
  // handler; then rings the doorbells of rings answered since the last
  // Poll().  Returns the number of entries taken (malformed ones included).
  size_t Poll();
  // Whether the owner may sleep on its Worker now (see "Idle" above).
  bool MaySleep();
  // When MaySleep() would say yes without further entries (for the owner's
  // wait deadline); time_point::max() while asleep.
  Clock::time_point PollDeadline() const;

  // Closes the ring of connection `ep`, if any: unregistered, its tail
  // freed for a new ring.  Entries taken but not answered are dropped.
  void Close(EndpointId ep);

  size_t ring_count() const { return rings_.size(); }
  // The ring of connection `ep`.
  std::optional<uint32_t> RingOf(EndpointId ep) const;
  // Whether the answers to connection `ep`'s ring go by UCX's own one-sided
  // puts (false: pulse's messages, or no ring).
  bool AnswersOneSided(EndpointId ep) const;
  // The open rings with Layout::kDoubleLayer.
  size_t double_layer_rings() const;
  // Whether connection `ep`'s ring has Layout::kDoubleLayer (false: slots,
  // or no ring).
  bool DoubleLayer(EndpointId ep) const;
  // The connections that have a ring.
  std::vector<EndpointId> ring_endpoints() const;
  const RingHostCounters& counters() const { return counters_; }
  // The poll window in use now (adapts within the options' bounds).
  uint32_t window_us() const { return window_us_; }
  // When the last entry was taken (or the last wake-up arrived).
  Clock::time_point last_entry() const { return last_entry_; }

 private:
  struct Ring;
  RingHost(Worker* worker, const RingHostOptions& options, Handler handler);
  void OnOpen(EndpointId from, std::span<const uint8_t> payload);
  Result<std::vector<uint8_t>> Open(EndpointId from, std::span<const uint8_t> payload);
  void OnWake(EndpointId from, std::span<const uint8_t> payload);
  // The entry (or descriptor) at `r`'s head is torn: true while it may
  // still complete (torn_timeout since first seen so), false once it is
  // given up on.
  bool WaitForTornHead(Ring& r, Clock::time_point now);
  // Takes what is ready in `r`; returns entries taken.
  size_t Serve(Ring& r, size_t budget, Clock::time_point now);
  // Layout::kDoubleLayer: the descriptors in order, each entry as soon as
  // its bytes are complete (ring_format.h).
  size_t ServeDoubleLayer(Ring& r, size_t budget, Clock::time_point now);
  enum class EntryOutcome { kNotYet, kAnswered, kHandled };
  // The entry `seq` at `where` in the data area: handed to the handler if
  // complete, answered InvalidArgument if malformed or still incomplete
  // torn_timeout after `since`, else kNotYet.
  EntryOutcome TakeEntry(Ring& r, uint64_t seq, const Descriptor& where, Clock::time_point since,
                         Clock::time_point now);
  Status RespondDoubleLayer(Ring& r, uint64_t seq, const Status& status, std::span<const uint8_t> payload);
  Status WriteStatus(Ring& r, uint32_t sleep_epoch);
  void FlushDoorbells();
  // The open ring at `index`, or nullptr.  Remembers the last one found:
  // the entries of a scan and their answers mostly come from one ring.
  Ring* Find(uint32_t index);
  void Reap();
  uint32_t MinWindowUs() const;
  // Microseconds from the last entry taken (or wake-up) to `now`.
  int64_t GapUs(Clock::time_point now) const;
  // A gap polling bridged, or the largest window would have: the window
  // becomes twice it, never lower than it is, within the options' bounds.
  void RaiseWindowFor(int64_t gap_us);
  // Leaves the sleep epoch (by a wake-up message or by a scan that found
  // an entry first) and adapts the window to the gap that ended it.
  void EndSleep(Clock::time_point now);

  Worker* worker_;
  RingHostOptions options_;
  Handler handler_;
  // The notification structure: each ring's tail, by ring index (the tails
  // are allocations of their own, one key each; docs/ring.md).
  std::unordered_map<uint32_t, std::unique_ptr<Ring>> rings_;
  std::vector<uint32_t> free_indices_;
  Ring* found_ = nullptr;  // Find()'s last ring (reset when a ring closes)
  // Closed rings whose response puts have not completed.
  std::deque<std::unique_ptr<Ring>> closing_;
  std::vector<uint8_t> entry_;  // the entry being served, copied out (CopyEntry); reused
  std::vector<Ring*> rang_;  // FlushDoorbells' rings that rang (kept for its capacity)
  std::vector<uint32_t> moved_;  // Poll()'s rings whose tails moved (kept for its capacity)
  Clock::time_point last_entry_;
  bool polled_empty_ = false;  // an empty scan since the last entry taken
  uint32_t window_us_;         // the adaptive poll window (RingHostOptions)
  uint32_t sleep_epoch_ = 0;  // != 0: asleep in this epoch
  uint32_t epochs_ = 0;
  RingHostCounters counters_;
};

}  // namespace pulse::net::ring
