// The calling side of the JSON control operations of include/pulse/cluster.h:
// send {"op":...} on kAmControl, wait for the kAmControlReply with the same
// "seq".  Used by the CPU-node client and by `pulse cluster`.
// Not thread-safe: it belongs to the thread that drives the Worker.
#pragma once

#include <cstdint>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse {

class ControlClient {
 public:
  // Installs the kAmControlReply handler on `worker` (which must outlive this).
  explicit ControlClient(net::Worker* worker);

  // Sends `request` (an object with "op") to `ep` and waits up to `timeout`
  // for the answer.  Returns the answer when it has "ok": true; otherwise
  // the peer's "error" as FailedPrecondition-like InvalidArgument, Timeout,
  // or the transport's error.  Must not be called from a Worker handler.
  Result<nlohmann::json> Call(net::EndpointId ep, nlohmann::json request, net::Duration timeout);

 private:
  net::Worker* worker_;
  uint64_t next_seq_ = 1;
  std::unordered_map<uint64_t, nlohmann::json> replies_;
};

// Parses "host:port".  InvalidArgument naming the text otherwise.
Result<std::pair<std::string, uint16_t>> ParseAddress(const std::string& text);

}  // namespace pulse
