// The CPU node played by a test on its own thread with a net::Worker: control
// calls (JSON over kAmControl) and raw traversal messages to the switch and
// memory nodes, and what it learns about a memory node for one-sided access.
// Every wait has a deadline.  Not thread-safe: one thread drives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/cluster.h"
#include "pulse/message_batch.h"
#include "pulse/net.h"
#include "pulse/protocol.h"

namespace pulse::testing {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// UCX reads these when a Worker is created; children inherit them.
void SetUcxTestEnvironment();

// A random number for ports and names, different in every process.
uint32_t RandomNumber();

// The bytes of a hex string ("0a1b..." -> {0x0a, 0x1b, ...}).
std::vector<uint8_t> HexDecode(const std::string& hex);

class TestCpuNode {
 public:
  // Creates the worker; a failure fails the test and leaves ok() false.
  // Without `credentials` it proves the cluster secret of
  // $PULSE_CLUSTER_SECRET_FILE (the rack's), like the rack's own CPU node.
  explicit TestCpuNode(std::optional<net::Credentials> credentials = std::nullopt);

  bool ok() const { return worker_ != nullptr; }
  net::Worker& worker() { return *worker_; }

  // Connects to "host:port".
  Result<net::EndpointId> Connect(const std::string& address, Clock::duration timeout = std::chrono::seconds(10));

  // Sends a control request and waits for the answer (the whole reply, "ok"
  // true or false).  A null json on timeout.
  json Call(net::EndpointId ep, json request, Clock::duration timeout = std::chrono::seconds(10));

  Status SendTraversal(net::EndpointId ep, const TraversalMessage& m);
  Status SendRaw(net::EndpointId ep, std::vector<uint8_t> bytes);
  // `bytes` as a kAmBatch envelope (include/pulse/message_batch.h).
  Status SendRawBatch(net::EndpointId ep, std::vector<uint8_t> bytes);
  // kAmBatch envelopes of responses received so far.
  uint64_t envelopes_received() const { return envelopes_received_; }
  // The response to `request_id`, or Timeout after `timeout`.
  Result<TraversalMessage> WaitResponse(uint64_t request_id, Clock::duration timeout = std::chrono::seconds(10));
  // Lets the worker run (handlers, keepalive) for a moment.
  void Pump(Clock::duration d);

 private:
  std::unique_ptr<net::Worker> worker_;
  uint64_t next_seq_ = 1;
  std::map<uint64_t, json> replies_;
  std::map<uint64_t, TraversalMessage> responses_;
  uint64_t envelopes_received_ = 0;
};

// A memory node's view from the CPU node: its hello answer.  (One-sided
// access takes the key of one allocation, asked for per access: LocalRack.)
struct MemNodeView {
  uint32_t node = 0;
  std::string address;
  net::EndpointId ep = net::kInvalidEndpoint;
  uint64_t base = 0;
  uint64_t size = 0;
};

}  // namespace pulse::testing
