// A client's far-memory lifetimes: its session (a random id every request
// that allocates or asks for a key names, so that a memory node can tell
// which memory is this client's and reclaim it when the client ends or its
// lease runs out) and the durable roots it publishes or opens.  See
// Client::PublishRoot and docs/cluster.md "Memory lifetimes".
//
// Thread-safety: none; it belongs to its Client's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "client/connections.h"

namespace pulse {

class ClientLifetimes {
 public:
  // Makes memory node `n` usable (reconnecting it if it was lost).
  using EnsureFn = std::function<Status(MemNode& n)>;
  // `connections` must outlive this.
  ClientLifetimes(Connections* connections, EnsureFn ensure);

  uint64_t session() const { return session_; }
  // Adds the tenant and the session to a request.
  void Tag(nlohmann::json* request) const;
  // The same for an alloc, which names the durable root instead once the
  // client published or opened one.
  void TagAlloc(nlohmann::json* request) const;
  // An allocation was made on `node` (EndSession and PublishRoot go there).
  void NoteAllocation(uint32_t node) { nodes_used_.insert(node); }

  // Client::PublishRoot / OpenRoot / DropRoot.
  Status PublishRoot(const std::string& name, uint64_t addr);
  Result<uint64_t> OpenRoot(const std::string& name);
  Status DropRoot(const std::string& name);
  // Ends the session on every node it allocated on (best effort, bounded by
  // the request timeout): its memory is reclaimed at once.
  void EndSession();

 private:
  Result<nlohmann::json> CallNode(MemNode& n, nlohmann::json request);

  Connections* connections_;
  EnsureFn ensure_;
  uint64_t session_;
  std::string root_;  // allocations are durable under it once set
  // The nodes this session allocated on, and with a page directory every
  // node (a moved page takes its allocations along).
  std::set<uint32_t> NodesHoldingSession() const;
  std::set<uint32_t> nodes_used_;
};

}  // namespace pulse
