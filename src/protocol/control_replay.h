// The answers a node keeps so that control operations which must not run
// twice (alloc, free, unlock) are safe to re-send: ControlClient re-sends a
// request that went unanswered with the same "seq", and the network may
// duplicate one; the node answers such a copy with its first answer instead
// of running the operation again.  Keyed by (connection, seq): seq numbers
// belong to one ControlClient, which has one connection to the node.
// Bounded: the oldest answers are forgotten first (a caller re-sends within
// one call's timeout, long before `capacity` more operations).
// Not thread-safe: it belongs to the node's worker thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse {

class ControlReplay {
 public:
  explicit ControlReplay(size_t capacity = 4096) : capacity_(capacity) {}

  // Whether answers to `op` are kept (the operations not safe to run twice).
  static bool Kept(const std::string& op) { return op == "alloc" || op == "free" || op == "unlock"; }

  // The first answer to request `seq` of operation `op` from `from`, or
  // nullptr if there is none (not kept, not seen, or forgotten).
  const Result<nlohmann::json>* Find(net::EndpointId from, const std::string& op,
                                     const nlohmann::json& seq) const {
    if (!Kept(op) || !seq.is_number_unsigned()) return nullptr;
    auto it = answers_.find({from, seq.get<uint64_t>()});
    return it == answers_.end() ? nullptr : &it->second;
  }

  // Keeps the answer to request `seq` of `op` from `from` (if op is kept).
  void Remember(net::EndpointId from, const std::string& op, const nlohmann::json& seq,
                const Result<nlohmann::json>& answer) {
    if (!Kept(op) || !seq.is_number_unsigned()) return;
    const Key key{from, seq.get<uint64_t>()};
    if (!answers_.emplace(key, answer).second) return;
    order_.push_back(key);
    while (order_.size() > capacity_) {
      answers_.erase(order_.front());
      order_.pop_front();
    }
  }

  size_t size() const { return answers_.size(); }

 private:
  using Key = std::pair<net::EndpointId, uint64_t>;
  size_t capacity_;
  std::map<Key, Result<nlohmann::json>> answers_;
  std::deque<Key> order_;  // oldest first
};

}  // namespace pulse
