// The offload agent's forwarding thread (agent_server.h): a pulse::Client
// connected to the cluster, the memory agent's client over it, and the
// queue of operations the request thread submits.  Results go back through
// `deliver` (called on the forwarding thread; the agent queues them for the
// request thread).
//
// Pacing.  A read or write longer than max_message_bytes goes as pieces,
// and at most node_window_bytes of pieces are outstanding at one memory
// node (always at least one piece); the rest wait here, on-demand reads and
// write-backs ahead of prefetches and static loads.  Measured on the 2-core
// machine (docs/farmem_agent.md): a 1 MB message or 128 pieces of 64 KB at
// once each took ~50 ms to arrive, a lone 64 KB message ~0.2 ms.
//
// Thread-safety: Submit and Stop from any thread; the rest runs on the
// forwarding thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/agent_core.h"
#include "farmem/agent_memory_client.h"
#include "pulse/client.h"
#include "pulse/net.h"

namespace pulse::agent {

struct ForwarderOptions {
  uint64_t max_message_bytes = 64 << 10;  // longest piece
  uint64_t node_window_bytes = 256 << 10; // outstanding bytes per memory node
  std::chrono::milliseconds memory_timeout{5000};  // one piece at a memory node
};

// How many pieces of at most `piece` bytes `bytes` takes (at least one).
uint64_t PieceCount(uint64_t bytes, uint64_t piece);

// Whether a piece of `bytes` may start at a node with `outstanding` bytes in
// flight under `window`: always when nothing is outstanding (a piece larger
// than the window still goes, alone).
bool FitsWindow(uint64_t outstanding, uint64_t bytes, uint64_t window);

class ClientForwarder final : public Forwarder {
 public:
  using DeliverFn = std::function<void(ForwardResult)>;

  ClientForwarder(const ForwarderOptions& options, DeliverFn deliver);
  ~ClientForwarder() override;

  // Connects on the forwarding thread and waits for the outcome (bounded by
  // the client's connect_timeout).  Errors: those of Client::Connect and
  // MemoryAgentClient::Create.
  Status Start(const ClientOptions& options);
  // Stops and joins the thread.  Idempotent.
  void Stop();
  void Submit(std::vector<ForwardOp> ops) override;
  uint32_t memory_nodes() const { return memory_nodes_; }

 private:
  struct Piece {
    bool write = false;
    uint64_t addr = 0;
    uint64_t bytes = 0;
    farmem::PageClass cls = farmem::PageClass::kOnDemand;
    std::vector<uint8_t> data;  // write
    farmem::MemoryAgentClient::ReadDone read_done;
    farmem::MemoryAgentClient::Done write_done;
  };
  struct NodeQueue {
    std::deque<Piece> urgent;      // on demand, write-back
    std::deque<Piece> background;  // prefetch, static load
    uint64_t outstanding = 0;      // bytes in flight
  };

  void Loop();
  void StartOp(ForwardOp op);
  void Read(uint64_t addr, uint64_t bytes, farmem::PageClass cls, farmem::MemoryAgentClient::ReadDone done);
  void Write(uint64_t addr, std::vector<uint8_t> data, farmem::PageClass cls, farmem::MemoryAgentClient::Done done);
  void Enqueue(Piece piece);
  // Starts what each node's window allows.
  void Pump();
  void StartPiece(uint32_t node, Piece piece);

  ForwarderOptions options_;
  DeliverFn deliver_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<net::Worker*> worker_{nullptr};
  std::mutex mu_;
  std::vector<ForwardOp> inbox_;
  std::atomic<bool> has_inbox_{false};
  std::unique_ptr<Client> client_;
  std::unique_ptr<farmem::MemoryAgentClient> memory_;
  uint32_t memory_nodes_ = 0;
  // Forwarding thread only.
  std::map<uint32_t, NodeQueue> nodes_;
  bool pump_ = false;  // a piece ended: its node's window has room
};

}  // namespace pulse::agent
