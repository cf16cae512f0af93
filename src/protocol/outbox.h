// The sending half of message aggregation (include/pulse/message_batch.h):
// encoded traversal messages queued per destination until the owner's next
// Flush(), which sends each destination's queue in as few active messages
// as BatchLimits allow: a run of one as a plain kAmTraversal message, a
// longer run in one kAmBatch envelope.  Nothing here waits: the owner
// flushes at the end of the pass that produced the messages (a memory
// node's engine slice, a CPU node's turn of its event loop, a switch's
// network pass), so a message is never held for company.
//
// Counters per outbox (an owner keeps one per direction): active messages
// sent, traversal messages they carried, envelopes among them; carried /
// messages is the aggregation factor.
//
// Not thread-safe: it belongs to the thread that drives its Worker.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/message_batch.h"
#include "pulse/net.h"

namespace pulse {

class Outbox {
 public:
  struct Counters {
    uint64_t messages = 0;   // active messages sent (plain and envelopes)
    uint64_t carried = 0;    // traversal messages in them
    uint64_t envelopes = 0;  // of `messages`, kAmBatch envelopes
    uint64_t bytes = 0;      // payload bytes sent
    uint64_t failed = 0;     // traversal messages whose send failed (handed to the caller)
  };
  // One queued message: its encoding and the owner's tag (a request id,
  // what the message is), returned with it if its send fails.
  struct Entry {
    std::vector<uint8_t> bytes;
    uint64_t tag = 0;
  };
  // Gets each message of a send that failed, with the Worker's error.  It
  // may Add() to this or any outbox (what it adds here waits for the next
  // Flush).
  using FailedFn = std::function<void(net::EndpointId to, Entry&& entry, const Status& why)>;

  // `worker` must outlive this.  Limits are clamped to what receivers
  // accept (BatchLimits::Clamped).
  Outbox(net::Worker* worker, BatchLimits limits) : worker_(worker), limits_(limits.Clamped()) {}

  // Queues `bytes` (one EncodeMessage) for `to`.
  void Add(net::EndpointId to, std::vector<uint8_t> bytes, uint64_t tag = 0);
  // Sends everything queued, each destination's messages in the order they
  // were added.  Messages whose send fails go to `failed` (may be empty:
  // then they are only counted).
  void Flush(const FailedFn& failed);

  bool empty() const { return queued_ == 0; }
  const Counters& counters() const { return counters_; }
  const BatchLimits& limits() const { return limits_; }

 private:
  // Sends entries [begin, end) of one destination as one active message.
  void SendRun(net::EndpointId to, std::vector<Entry>& entries, size_t begin, size_t end, const FailedFn& failed);

  net::Worker* worker_;
  BatchLimits limits_;
  // Destinations in the order they first got a message since the last
  // flush (few: the peers of one pass).
  std::vector<std::pair<net::EndpointId, std::vector<Entry>>> queues_;
  size_t queued_ = 0;
  Counters counters_;
};

// What a receiver counts of the envelopes it got.
struct InboundBatches {
  uint64_t envelopes = 0;  // kAmBatch envelopes taken apart
  uint64_t carried = 0;    // traversal messages in them
  uint64_t malformed = 0;  // envelopes refused whole
};

// The receiving half: decodes a kAmBatch envelope of traversal messages
// (inner_am kAmTraversal), hands each inner message to `handle`, in order,
// as if it had arrived alone, and counts it in `counters`.  InvalidArgument
// naming the fault (nothing handled, counted as malformed) for a malformed
// envelope.
Status UnpackTraversalBatch(std::span<const uint8_t> envelope, InboundBatches* counters,
                            const std::function<void(std::span<const uint8_t>)>& handle);
// {"envelopes_in", "carried_in", "malformed_envelopes"}, for `stats`.
nlohmann::json InboundJson(const InboundBatches& c);

// {"messages", "carried", "envelopes", "bytes", "failed",
//  "per_message": carried / messages (0 before any)}, for `stats`.
nlohmann::json OutboxJson(const Outbox::Counters& c);

}  // namespace pulse
