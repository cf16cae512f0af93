// pulse::ds::BTree's traversals as native handlers: lower_bound, range
// aggregate and range scan.  Each descends from the node it is given (inner
// nodes: the child that may hold the key), then works along the leaf chain;
// a resumed call starts wherever the previous one stopped, and the node's
// `leaf` field says which phase that is.
#include <algorithm>

#include "pulse/rpc.h"
#include "rpc/handlers/rpc_states.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {
namespace {

using Node = pulse_ds_btree_node;

// The child of an inner node that may hold key: the number of keys <= key.
uint64_t ChildFor(const Node& n, uint64_t key) {
  const uint32_t count = std::min<uint32_t>(n.count, PULSE_DS_BTREE_MAX_KEYS);
  return n.slot[std::upper_bound(n.keys, n.keys + count, key) - n.keys];
}

uint32_t CountOf(const Node& n) { return std::min<uint32_t>(n.count, PULSE_DS_BTREE_MAX_KEYS); }

RpcOutcome LowerBound(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>*) {
  BTreeLowerBoundState st = StateAs<BTreeLowerBoundState>(state);
  RpcOutcome out;
  st.found = 0;
  for (;;) {
    Node n;
    if (!memory.Load(ptr, &n)) {
      out = memory.Stopped();
      break;
    }
    if (!n.leaf) {
      ptr = ChildFor(n, st.key);
      continue;
    }
    const uint32_t count = CountOf(n);
    const uint32_t i = static_cast<uint32_t>(std::lower_bound(n.keys, n.keys + count, st.key) - n.keys);
    if (i < count) {
      st.found = 1;
      st.rkey = n.keys[i];
      st.rvalue = n.slot[i];
      break;
    }
    ptr = n.slot[PULSE_DS_BTREE_NEXT];
    if (ptr == 0) break;
  }
  StoreState(state, st);
  return out;
}

// Walks from ptr (descending to lo's leaf first) and calls visit(key, value)
// for each entry with lo <= key <= hi until visit returns false.
template <typename Visit>
RpcOutcome WalkRange(RpcMemory& memory, uint64_t ptr, uint64_t lo, uint64_t hi, Visit visit) {
  for (;;) {
    Node n;
    if (!memory.Load(ptr, &n)) return memory.Stopped();
    if (!n.leaf) {
      ptr = ChildFor(n, lo);
      continue;
    }
    const uint32_t count = CountOf(n);
    for (uint32_t i = 0; i < count; ++i) {
      if (n.keys[i] > hi) return {};
      if (n.keys[i] >= lo && !visit(n.keys[i], n.slot[i])) return {};  // the visitor has enough
    }
    ptr = n.slot[PULSE_DS_BTREE_NEXT];
    if (ptr == 0) return {};
  }
}

RpcOutcome Aggregate(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>*) {
  BTreeAggregateState st = StateAs<BTreeAggregateState>(state);
  RpcOutcome out = WalkRange(memory, ptr, st.lo, st.hi, [&](uint64_t, uint64_t v) {
    st.sum += v;
    st.min = std::min(st.min, v);
    st.max = std::max(st.max, v);
    ++st.count;
    return true;
  });
  StoreState(state, st);
  return out;
}

RpcOutcome Scan(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>* output) {
  BTreeScanState st = StateAs<BTreeScanState>(state);
  RpcOutcome out;
  if (st.emitted < st.limit) {
    out = WalkRange(memory, ptr, st.lo, st.hi, [&](uint64_t k, uint64_t v) {
      const uint64_t pair[2] = {k, v};
      const auto* b = reinterpret_cast<const uint8_t*>(pair);
      output->insert(output->end(), b, b + sizeof(pair));
      return ++st.emitted < st.limit;
    });
  }
  StoreState(state, st);
  return out;
}

}  // namespace

extern const RpcHandler kRpcHandler_btree_lower_bound{kRpcBTreeLowerBound, "btree_lower_bound",
                                                      sizeof(BTreeLowerBoundState), LowerBound};
extern const RpcHandler kRpcHandler_btree_aggregate{kRpcBTreeAggregate, "btree_aggregate",
                                                    sizeof(BTreeAggregateState), Aggregate};
extern const RpcHandler kRpcHandler_btree_scan{kRpcBTreeScan, "btree_scan", sizeof(BTreeScanState), Scan};

}  // namespace pulse::rpc
