// Page reads and write-backs to the offload agent on connections their
// callers drive themselves (AgentBackend's fast path).  A lane is a UCX
// worker with one endpoint to the agent; a caller takes a free lane, sends
// its request and progresses the lane's worker until the answer, the
// lane's failure or its timeout.  Against the backend's network thread this
// saves two thread hand-offs per page (caller -> network thread -> caller),
// each a wake-up on a loaded machine (docs/farmem_agent.md: where a
// fault's time goes).  The agent sees each lane as a host connection of
// its own; regions stay with the backend's main connection.
//
// Thread-safe: lanes are handed out under a mutex, one caller each.
#pragma once

#include <atomic>
#include <chrono>
#include <span>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "farmem/agent_wire.h"
#include "pulse/farmem/agent_backend.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::farmem {

class AgentLanes {
 public:
  // Opens `count` lanes to the agent at host:port.  Errors: those of
  // Worker::Create and Worker::Connect, naming the agent.
  static Result<std::unique_ptr<AgentLanes>> Open(uint32_t count, const net::WorkerOptions& worker,
                                                  const std::string& host, uint16_t port,
                                                  std::chrono::milliseconds connect_timeout);
  ~AgentLanes();

  // A reply, and whether its data went to the caller's buffer.
  struct Answer {
    AgentReply reply;
    bool delivered = false;  // reply.data (then empty) was copied to `read_into`
  };

  // Sends `request` on a free lane (waiting for one at most `timeout`) and
  // waits for its reply, at most `timeout`.  Returns the reply (its own
  // status not examined), or Unavailable (the lane's connection failed,
  // with why), Timeout (no answer, or no free lane), the send's error.
  // `what` names the request in those messages.  A successful reply whose
  // data is exactly `read_into.size()` bytes (non-zero) is copied there
  // from the message itself (no copy in between) and returned without
  // data, `delivered`; any other keeps its data.  Page reads with the
  // agent's stamps are timed into hop_stats().
  Result<Answer> Call(AgentRequest request, std::chrono::milliseconds timeout, const std::string& what,
                      std::span<uint8_t> read_into = {});

  // The timed page reads' hop figures since Open (AgentHopStats).
  AgentHopStats hop_stats() const;

  struct Lane;

 private:
  AgentLanes() = default;
  Lane* Take(std::chrono::milliseconds timeout);
  void Give(Lane* lane);

  std::vector<std::unique_ptr<Lane>> lanes_;
  std::string address_;
  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<Lane*> free_;  // guarded by mu_
  uint64_t next_id_ = 1;     // guarded by mu_
  // AgentHopStats, summed by the calling threads.
  std::atomic<uint64_t> reads_timed_{0}, send_ns_{0}, to_agent_ns_{0}, agent_ns_{0}, from_agent_ns_{0},
      deliver_ns_{0}, reads_slept_{0}, from_agent_slept_ns_{0};
};

}  // namespace pulse::farmem
