// The switch's routing logic (seed 000 section 5, Fig. 6): it holds only
// base range -> memory node, routes requests by cur_ptr, turns a "not local"
// response into a continuation to the owner of the new cur_ptr, and answers
// a pointer no node owns with an invalid-pointer error to the CPU node.
// Pure logic, no I/O: the switch process feeds it decoded messages.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "protocol/routing_table.h"
#include "pulse/protocol.h"
#include "pulse/status.h"

namespace pulse {

struct RouterCounters {
  uint64_t requests = 0;
  uint64_t forwards = 0;          // continuations between memory nodes
  uint64_t responses = 0;
  uint64_t invalid_pointers = 0;
};

class Router {
 public:
  // Maps [base, base+length) to a memory node.  InvalidArgument on overlap.
  Status AddRange(uint64_t base, uint64_t length, NodeId node);
  // The memory node owning addr, if any: the page owner's answer when it
  // has one (a page that moved between racks), else the range's node.
  std::optional<NodeId> Owner(uint64_t addr) const;
  // Installs the page owner (the switch's page directory; none by default).
  void SetPageOwner(std::function<std::optional<NodeId>(uint64_t)> page_owner) {
    page_owner_ = std::move(page_owner);
  }

  // Decides where `message` goes next and rewrites it for that hop
  // (RouteNext, protocol/routing_table.h): a continuation becomes a request;
  // an unroutable pointer becomes a kFaultInvalidPointer response.
  RouteDecision Route(TraversalMessage* message);

  const RouterCounters& counters() const { return counters_; }

 private:
  struct Entry {
    uint64_t length;
    NodeId node;
  };
  std::map<uint64_t, Entry> ranges_;  // by base
  std::function<std::optional<NodeId>(uint64_t)> page_owner_;
  RouterCounters counters_;
};

}  // namespace pulse
