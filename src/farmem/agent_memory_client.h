// The client side of the memory agent (src/agent/memory_agent.h): page reads,
// writes and region preloads sent as kAmMemAgentRequest to the memory node
// owning a far address, over a pulse::Client's fabric and event loop (it is
// an EventSource of the Client, like pulse::RpcClient), so the node counts
// the traffic by class.  Each request has an id from the client's counter
// space and is tracked by the one RequestTracker (sent once, given up after
// request_timeout: the fabric is reliable, and a dead node is what a timeout
// means here).
//
// Thread-safety: none; it belongs to its Client's thread.  Callbacks run
// inside the Client's waits (any synchronous call, Poll, or DriveUntil).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pulse/client.h"
#include "pulse/farmem/page_backend.h"

namespace pulse::farmem {

struct MemoryAgentCounters {
  uint64_t requests = 0;
  uint64_t timeouts = 0;
  uint64_t bad_replies = 0;
  uint64_t stale_replies = 0;
};

class MemoryAgentClient {
 public:
  using ReadDone = std::function<void(Result<std::vector<uint8_t>>)>;
  using Done = std::function<void(Result<uint64_t>)>;

  // `client` must outlive this object.  Errors: InvalidArgument (no client).
  static Result<std::unique_ptr<MemoryAgentClient>> Create(Client* client,
                                                           std::chrono::milliseconds request_timeout);
  ~MemoryAgentClient();
  MemoryAgentClient(const MemoryAgentClient&) = delete;
  MemoryAgentClient& operator=(const MemoryAgentClient&) = delete;

  // Asynchronous operations; `done` runs exactly once, inside a later wait of
  // the Client.  Errors passed to done: InvalidArgument (address of no
  // memory node), Unavailable (its node is not connected), Timeout (no
  // answer; the message names the node), and whatever the node answered
  // (PermissionDenied, OutOfRange, IoError for an unreadable file).
  void ReadAsync(uint64_t addr, uint64_t bytes, PageClass cls, ReadDone done);
  void WriteAsync(uint64_t addr, std::vector<uint8_t> data, PageClass cls, Done done);
  // Fills [addr, addr+bytes) from `file` at `file_offset` (zeros past its
  // end; all zeros if `file` is empty).  done gets the file bytes copied.
  void PreloadAsync(uint64_t addr, uint64_t bytes, const std::string& file, uint64_t file_offset, Done done);

  // Synchronous forms: drive the Client until done (the tracker's timeout
  // bounds the wait).
  Result<std::vector<uint8_t>> Read(uint64_t addr, uint64_t bytes, PageClass cls);
  Result<uint64_t> Write(uint64_t addr, std::vector<uint8_t> data, PageClass cls);
  Result<uint64_t> Preload(uint64_t addr, uint64_t bytes, const std::string& file, uint64_t file_offset);

  size_t pending() const;
  const MemoryAgentCounters& counters() const;

  struct Impl;

 private:
  explicit MemoryAgentClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pulse::farmem
