// ReplicaRings: how a chain replica sends another replica its messages
// (forwards down the chain, acknowledgements and backfills up and down it)
// by one-sided writes into the other's ring (seed 002 IV-B: "the head
// forwards by a one-sided write into the next replica's ring"), instead of
// as active messages.
//
// Per connection to another replica it opens, on first use, a ring pair
// with that node's RingServer (net/ring_client.h) and posts each message
// as a service entry for kAmTxRequest (memnode/extension_entry.h).  The
// receiver hands the entry to its replica exactly as it would the
// message, and answers the slot at once (the credit comes back).  A
// message that cannot go by ring goes as a message, so nothing is lost and
// the caller need not care which way it went:
//   - no ring: the transport has no one-sided puts (TCP: UCX would emulate
//     them, and the message is better there), the other node refused or
//     did not answer the open (tried once per connection);
//   - no credit (every slot in flight) or larger than a slot;
//   - the receiver refused the entry in its slot: it is sent again as a
//     message (it never reached the replica, so it is not delivered twice).
// An entry in a ring whose connection then fails is lost with the
// connection, like a message on it; the replica's failure handling
// (skipping the dead member, rerouting what it had) covers both.
//
// Thread-safety: none; the memory node's thread drives it (from the
// replica's Poll, never inside a Worker handler: opening a ring waits for
// the other node's answer).  Destroy it before the Worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/ring_client.h"
#include "pulse/net.h"

namespace pulse::tx {

struct ReplicaRingsOptions {
  // Slots of 8 KiB fit the forward of a transaction of 4 reads and 2
  // writes of 1 KiB (about 6.3 KiB with its values); 128 of them stay
  // inside a memory node's largest ring (RingHostOptions::max_ring_bytes,
  // 1 MiB).  A transaction is latency-bound: 128 in flight per connection
  // is more than a chain's group commit has.
  net::ring::Geometry geometry{128, 8192};
  // How long opening a ring may hold up the node's loop (once per
  // connection; the node answers an open from its handler, in well under
  // a millisecond even on a loaded host).
  std::chrono::milliseconds open_timeout{250};
};

struct ReplicaRingsCounters {
  uint64_t by_ring = 0;        // messages posted into the other replica's ring
  uint64_t by_message = 0;     // sent as messages (no ring, full, too large)
  uint64_t refused = 0;        // posted, refused in the slot, sent again by message
  uint64_t rings_opened = 0;
  uint64_t opens_failed = 0;   // connections whose other end has no ring for us
};

class ReplicaRings {
 public:
  using SendFn = std::function<void(net::EndpointId ep, std::vector<uint8_t> message)>;
  // `worker` must outlive this; `send_message` sends a kAmTxRequest message.
  ReplicaRings(net::Worker* worker, ReplicaRingsOptions options, SendFn send_message);
  ~ReplicaRings();

  // Sends `message` (a kAmTxRequest message) to the replica on `ep`: into
  // its ring if it can (true), else as a message (false).
  bool Send(net::EndpointId ep, std::vector<uint8_t> message);
  // Takes the receivers' answers (credits back; a refused entry is sent
  // again as a message) and wakes a receiver that went to sleep with
  // entries of ours in flight.  Cheap when nothing is in flight.
  void Poll();
  // Connection `ep` failed: its ring goes (destroyed at the next Poll:
  // this may be called from a Worker handler) and the forwards in it with
  // it; later forwards on `ep` go by message.
  void Close(net::EndpointId ep);

  const ReplicaRingsCounters& counters() const { return counters_; }
  // For `stats`: the counters, and per connection "ring" or why not.
  nlohmann::json Stats() const;

 private:
  struct Ring {
    std::unique_ptr<net::ring::RingClient> client;  // null: messages (why_not says why)
    std::string why_not;
    std::unordered_map<uint64_t, std::vector<uint8_t>> in_flight;  // entry seq -> the forward
  };
  // The ring to `ep`, opened on first use; nullptr if it has none.
  Ring* RingTo(net::EndpointId ep);

  net::Worker* worker_;
  ReplicaRingsOptions options_;
  SendFn send_message_;
  std::map<net::EndpointId, Ring> rings_;
  std::vector<std::unique_ptr<net::ring::RingClient>> closed_;  // destroyed at the next Poll
  std::vector<uint8_t> entry_;  // the framed entry (kept for its capacity)
  ReplicaRingsCounters counters_;
};

}  // namespace pulse::tx
