// AgentBackend: the host agent's PageBackend (page_backend.h) for the
// proxy and agent modes: every page request goes to the offload agent
// (`pulse agent`) of this machine over the fabric (UCX active messages), and
// the agent decides what reaches the memory nodes (its caches, batching,
// prefetch; in proxy mode nothing but forwarding).
//
// Thread-safe: any number of threads may call it at once (the pager's
// fault handlers).  It owns one network thread that drives its UCX worker;
// callers hand it requests and wait for their answers, each at most
// `request_timeout` (then Timeout naming the agent and the region).  Page
// reads and write-backs take a faster path when `lanes` > 0: connections
// of their own that the calling thread drives itself, one caller per lane
// (no hand-off to the network thread and back).  If the agent goes away
// every waiting and later call fails at once with Unavailable naming the
// agent's address: nothing hangs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "pulse/farmem/page_backend.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::farmem {

struct AgentBackendOptions {
  std::string agent_address = "127.0.0.1:7300";  // host:port of `pulse agent`
  std::chrono::milliseconds connect_timeout{5000};
  // One request's budget.  Longer than the agent's own per-operation budget
  // at the memory nodes (`pulse agent --memory-timeout-ms`, 5 s), so that a
  // dead memory node is reported by the agent, naming the node, before this
  // side gives up.  A region's creation preloads whole chunks: it gets
  // create_timeout instead.
  std::chrono::milliseconds request_timeout{15000};
  std::chrono::milliseconds create_timeout{120000};
  // Connections for page reads and write-backs driven by their callers (the
  // pager's fetch threads and evictor: 4 + 1 by default); 0: every request
  // through the network thread.
  uint32_t lanes = 5;
  net::WorkerOptions worker;
};

// Where a page read's time on a lane goes, summed over the reads whose
// reply carried the agent's stamps (AgentStamps in src/farmem/agent_wire.h:
// one steady clock for the machine's processes), in
// nanoseconds.  Per read, the stages follow each other:
//   send_ns        the lane's Send call (encoding, handing the request to UCX)
//   to_agent_ns    from before that Send to the agent's core taking the request:
//                  the request on the wire plus the wake-up of the agent's
//                  request thread (and its decoding)
//   agent_ns       the agent's part, its core to its reply (caches,
//                  forwarding, the memory node)
//   from_agent_ns  from the agent starting its reply to the lane's handler
//                  taking it: encoding and sending 64 KiB, the transfer and
//                  the wake-up of the waiting thread
//   deliver_ns     from the handler to the call's return (the copy to the
//                  page is in the handler, so in from_agent_ns)
// reads_slept counts the reads during which the lane slept on its event fd
// (its answer came after the worker's poll window), from_agent_slept_ns their
// from_agent_ns: the others' mean is the reply without a wake-up.
struct AgentHopStats {
  uint64_t reads_timed = 0;
  uint64_t send_ns = 0;
  uint64_t to_agent_ns = 0;
  uint64_t agent_ns = 0;
  uint64_t from_agent_ns = 0;
  uint64_t deliver_ns = 0;
  uint64_t reads_slept = 0;
  uint64_t from_agent_slept_ns = 0;
};

class AgentBackend : public PageBackend {
 public:
  // Connects to the agent.  Errors: InvalidArgument (bad address),
  // Unavailable/Timeout (no agent there).
  static Result<std::unique_ptr<AgentBackend>> Connect(const AgentBackendOptions& options);
  ~AgentBackend() override;

  // PageBackend, with its contract for region names (page_backend.h; the
  // agent keeps the names, so they are shared by every process using this
  // agent).  Errors, besides those PageBackend lists (AlreadyExists: a
  // second writer; FailedPrecondition: a writer still holds a region a
  // reader attaches, or a write-back to a read-only region; NotFound;
  // InvalidArgument: an unreadable file, naming it; OutOfRange: pages past
  // the region; the memory node's, naming the region and the node):
  // Unavailable (the agent is gone, naming its address), Timeout (naming
  // the agent and the region).
  Result<uint64_t> CreateRegion(const std::string& name, uint64_t bytes, const std::string& file,
                                bool read_only) override;
  Status ReadPages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, void* dst,
                   PageClass cls) override;
  Status WritePages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, const void* src) override;
  Status MarkReadOnly(uint64_t id) override;
  Status DestroyRegion(uint64_t id) override;

  // The agent's counters as JSON text (cache hits, traffic by class, batches,
  // its CPU seconds); the same errors.
  Result<std::string> AgentStats();

  // The page reads' hop figures since Connect (all zero without lanes).
  AgentHopStats hop_stats() const;

  struct Impl;

 private:
  explicit AgentBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The factory the host agent's MakeBackend calls for the proxy and agent
// modes, e.g. MakeAgentBackend({.agent_address = options.agent_address}).
// Which of the two modes a request gets is the agent's configuration
// (`pulse agent --mode proxy|agent`): one agent process per mode.
inline Result<std::unique_ptr<PageBackend>> MakeAgentBackend(const AgentBackendOptions& options) {
  auto b = AgentBackend::Connect(options);
  if (!b.ok()) return b.status();
  return std::unique_ptr<PageBackend>(std::move(*b));
}

}  // namespace pulse::farmem
