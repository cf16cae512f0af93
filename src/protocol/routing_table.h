// The routing table of the direct data path (docs/architecture.md section
// 6): which memory node owns which base range of far memory, where it
// listens and whether it is alive, under a version that increases on every
// membership change.  The switch owns the table and pushes it (kAmRouting,
// and in its hello / register_memnode answers) to every CPU node and memory
// node; they route traversal messages with their copy.  One type and one
// encoding (JSON) for all three.
//
// Also here: RouteNext, the one rule that decides where a traversal message
// goes next by a table, used by the switch (on-path routing) and by the
// memory nodes (direct routing).
//
// Value types, not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/protocol.h"
#include "pulse/status.h"

namespace pulse {

using NodeId = uint32_t;

// How traversal messages travel (the cluster TOML's `routing`, the
// processes' --routing flag; PULSE_ROUTING when neither is given).
enum class RoutingMode {
  kDirect,  // CPU node -> owner -> next owner ... -> CPU node; the switch is the control plane
  kSwitch,  // every message through the switch (seed 000's on-path topology)
};
inline constexpr const char* kRoutingEnvironmentVariable = "PULSE_ROUTING";
// "direct" | "switch".  InvalidArgument naming `what` otherwise.
Result<RoutingMode> ParseRoutingMode(std::string_view name, std::string_view what);
std::string_view RoutingModeName(RoutingMode mode);
// $PULSE_ROUTING if set (and valid), else kDirect.  InvalidArgument for a
// bad value.
Result<RoutingMode> DefaultRoutingMode();

struct RouteEntry {
  NodeId node = 0;
  std::string address;  // "host:port"
  uint64_t base = 0;
  uint64_t size = 0;
  bool alive = false;
  bool operator==(const RouteEntry&) const = default;
};

class RoutingTable {
 public:
  // 0 for an empty table that never changed; every change adds one.
  uint32_t version() const { return version_; }
  const std::vector<RouteEntry>& entries() const { return entries_; }

  // The entry whose [base, base+size) holds addr, alive or not; nullptr if
  // none.
  const RouteEntry* OwnerOf(uint64_t addr) const;
  const RouteEntry* Find(NodeId node) const;

  // The switch's changes.  Put adds or replaces the entry of e.node
  // (InvalidArgument if its range is empty or overlaps another node's);
  // SetAlive marks a known node up or down.  Each change that alters the
  // table increases the version; one that alters nothing does not.
  Status Put(const RouteEntry& e);
  void SetAlive(NodeId node, bool alive);

  // Takes `newer` if its version is higher than ours (a push that arrives
  // after a later one is ignored).  Returns whether it did.
  bool Adopt(RoutingTable newer);

  // {"version":V,"nodes":[{"node","address","base","size","alive"},...]}
  nlohmann::json ToJson() const;
  // InvalidArgument naming the bad field.
  static Result<RoutingTable> FromJson(const nlohmann::json& j);

 private:
  uint32_t version_ = 0;
  std::vector<RouteEntry> entries_;  // by node id
};

struct RouteDecision {
  enum class To { kMemoryNode, kCpuNode } to;
  NodeId node;  // memory node id or CPU node id
};

// Where `m` goes next, given `owner` (the memory node owning an address,
// if any), rewriting it for that hop: a request goes to the owner of
// cur_ptr; a "not local" response (without kFlagPulseAcc) becomes a request
// (the continuation, redirect flag cleared) to the owner of its cur_ptr; any
// other response goes to the CPU node.  A pointer no node owns becomes a
// kFaultInvalidPointer response to the CPU node (then *unroutable is set
// when given).
RouteDecision RouteNext(const std::function<std::optional<NodeId>(uint64_t)>& owner, TraversalMessage* m,
                        bool* unroutable = nullptr);

}  // namespace pulse
