// AgentServer, `pulse agent`: the offload agent as a process (seed 003: the
// SmartNIC's role), in front of the memory nodes and shared by every host
// agent of the machine.  Host agents connect to its listener (AgentBackend,
// include/pulse/farmem/agent_backend.h) and send page requests
// (src/farmem/agent_wire.h); its AgentCore (agent_core.h) decides what
// reaches far memory.
//
// Threads: two, each owning one UCX worker (so no worker is shared between
// threads, which UCX's worker model forbids without a lock on every call):
//   the request thread (Run's caller) receives host requests, runs the core
//     (caches, aggregation, prefetch decisions) and sends replies;
//   the forwarding thread owns a pulse::Client connected to the cluster and
//     posts the core's operations to the memory agents asynchronously (up to
//     the core's window in flight), collecting their completions, which it
//     hands back to the request thread.
// Queues between them are a mutex-protected vector each, and each side wakes
// the other's worker (Worker::Wake), so neither spins when idle.
//
// Budgets: memory through the core's cache sizes (AgentOptions); CPU through
// `cpus` (the process's affinity, set before the threads start).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent_core.h"
#include "pulse/memory.h"
#include "pulse/net.h"

namespace pulse::agent {

// Where `pulse agent` listens unless told otherwise (AgentBackendOptions'
// default address).
inline constexpr uint16_t kDefaultAgentPort = 7300;

struct AgentServerOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t port = 0;            // 0: a free port (reported by port())
  std::string switch_address = "127.0.0.1:7100";
  TenantId tenant = 1;          // whose far memory the regions are
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds memory_timeout{5000};  // one operation at a memory node
  // The largest message to a memory agent: longer reads and writes (cache
  // fills, static loads, merged write-backs of up to 1 MB) go as pieces of
  // this size, all in flight at once.  `pulse bench net` on the 2-core
  // machine: one 64 KiB message 21 us one way, 256 KiB 182 us, 512 KiB and
  // more ~6-10 ms (UCX's shared-memory FIFO fills and both sides sleep and
  // wake per fragment), so a 1 MB message costs ~20 times 16 pieces.
  uint64_t max_message_bytes = 64 << 10;
  // Bytes of reads and writes outstanding at one memory node (at least one
  // message always): beyond it pieces wait in the agent, on-demand reads and
  // write-backs ahead of prefetches and static loads.  Many pieces at once
  // fill the same FIFO as one long message (128 pieces of 64 KiB: ~50 ms
  // each), and a page fault would wait behind every prefetch at the node.
  uint64_t node_window_bytes = 256 << 10;
  std::vector<int> cpus;        // CPU affinity (empty: any)
  AgentOptions agent;
  net::WorkerOptions worker;    // the request thread's worker; its poll settings are the forwarding thread's too
  std::string log_level = "info";  // error | warn | info | debug
  std::string instance_id;      // returned by "stats" as "instance" (how `pulse cluster up` knows its process)
};

class AgentServer {
 public:
  // Checks the options, sets the affinity, connects to the cluster and
  // listens.  Errors: InvalidArgument (options), Unavailable/Timeout (the
  // cluster), IoError (listening).
  static Result<std::unique_ptr<AgentServer>> Start(const AgentServerOptions& options);
  ~AgentServer();
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  uint16_t port() const;
  // Serves until RequestStop() or a control "shutdown" (kAmControl; it also
  // answers "stats": {"role":"agent","counters":{...}}).  Returns OK then.
  Status Run();
  // Thread-safe.
  void RequestStop();

  struct Impl;

 private:
  explicit AgentServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The process's peak resident set (KiB).
uint64_t ProcessMaxRssKib();

}  // namespace pulse::agent
