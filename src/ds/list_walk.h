// What List and ForwardList share: their nodes have one layout
// (pulse_ds_list_node; ForwardList leaves prev unused), so the same offloaded
// find and aggregate iterators and the same node read serve both.  Defined in
// list.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "pulse/client.h"
#include "pulse/ds/aggregate.h"
#include "pulse/status.h"

namespace pulse::ds::internal {

// Loads the list iterators (once per process).  Errors: an embedded program
// did not verify.
Status LoadListPrograms();

struct ListMatch {
  bool found = false;
  uint64_t node = 0;   // far address of the first node holding the value
  uint64_t index = 0;  // its position from head
};
// The first node from `head` holding `value`, offloaded under `mode` (an
// empty list, head == 0, finds nothing).  `what` names the caller in errors.
Result<ListMatch> FindInList(Client* client, uint64_t head, uint64_t value,
                             std::optional<ExecutionMode> mode, std::string_view what);

// sum/min/max/count of the values v with lo <= v <= hi from `head`, offloaded.
Result<Aggregate> AggregateList(Client* client, uint64_t head, uint64_t lo, uint64_t hi,
                                std::optional<ExecutionMode> mode, std::string_view what);

// Reads the node at `addr` (nothing if addr == 0) into *value and *next.
Status LoadListNode(Client* client, uint64_t addr, uint64_t* value, uint64_t* next);

}  // namespace pulse::ds::internal
