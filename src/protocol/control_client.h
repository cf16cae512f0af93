// The calling side of the JSON control operations of include/pulse/cluster.h:
// send {"op":...} on kAmControl, wait for the kAmControlReply with the same
// "seq".  Used by the CPU-node client and by `pulse cluster`.
// Not thread-safe: it belongs to the thread that drives the Worker.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/request_tracker.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse {

class ControlClient {
 public:
  // Installs the kAmControlReply handler on `worker` (which must outlive this).
  explicit ControlClient(net::Worker* worker);

  // Sends `request` (an object with "op") to `ep` and waits up to `timeout`
  // for the answer.  A request that may be sent again (Resendable) and is
  // not answered is re-sent with the same "seq" after 1/8, 3/8 and 7/8 of
  // `timeout` (RetryPolicy::Spread; a lost request or answer: the peer
  // answers a copy of alloc, free or unlock from a record, ControlReplay).  Returns the answer when
  // it has "ok": true; otherwise the peer's error with the peer's code
  // (ControlReplyStatus), Timeout, or the transport's error.  Must not be
  // called from a Worker handler.
  Result<nlohmann::json> Call(net::EndpointId ep, nlohmann::json request, net::Duration timeout);

  // Whether Call re-sends `op`: the operations whose peers answer a copy as
  // they answered the first (hello, stats, lock, lock_renew, key, root_get,
  // persist, end_session: idempotent) or from a
  // record (alloc, free, unlock).  Not shutdown, nor unknown operations.
  static bool Resendable(const std::string& op);

  // Requests re-sent so far.
  uint64_t retransmissions() const { return retransmissions_; }

 private:
  // A call in flight: what to send again and where.
  struct Outgoing {
    net::EndpointId ep = net::kInvalidEndpoint;
    std::string op;
    std::string text;  // the request as sent, "seq" included
    net::Duration timeout{};
  };

  void Resend(uint64_t seq, Outgoing& call);

  net::Worker* worker_;
  uint64_t next_seq_ = 1;
  uint64_t retransmissions_ = 0;
  // The call under way (one at a time: Call waits for it); answers to
  // finished calls are stale.
  RequestTracker<Outgoing, nlohmann::json> tracker_;
};

// Parses "host:port".  InvalidArgument naming the text otherwise.
Result<std::pair<std::string, uint16_t>> ParseAddress(const std::string& text);

}  // namespace pulse
