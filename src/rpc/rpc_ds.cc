#include "pulse/rpc_ds.h"

#include <cstring>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "rpc/handlers/rpc_states.h"
#include "rpc/rpc_call_typed.h"

namespace pulse::rpc {
namespace {

ds::Aggregate ToAggregate(uint64_t sum, uint64_t min, uint64_t max, uint64_t count) {
  ds::Aggregate a;
  a.sum = sum;
  a.min = min;
  a.max = max;
  a.count = count;
  return a;
}

}  // namespace

Result<std::optional<uint64_t>> Find(RpcClient& rpc, const ds::UnorderedMap& map, uint64_t key,
                                     const RpcCallOptions& options, RpcResult* info) {
  UmapFindState st{key, kUmapStartIsSlot, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(CallTyped(rpc, kRpcUmapFind, map.BucketAddress(key), st, options, info, "rpc UnorderedMap::Find"));
  if (!st.found) return std::optional<uint64_t>();
  return std::optional<uint64_t>(st.value);
}

Result<std::optional<ds::BTree::Entry>> LowerBound(RpcClient& rpc, const ds::BTree& tree, uint64_t key,
                                                   const RpcCallOptions& options, RpcResult* info) {
  BTreeLowerBoundState st{key, 0, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(CallTyped(rpc, kRpcBTreeLowerBound, tree.root(), st, options, info, "rpc BTree::LowerBound"));
  if (!st.found) return std::optional<ds::BTree::Entry>();
  return std::optional<ds::BTree::Entry>(ds::BTree::Entry{st.rkey, st.rvalue});
}

Result<ds::Aggregate> AggregateRange(RpcClient& rpc, const ds::BTree& tree, uint64_t lo, uint64_t hi,
                                     const RpcCallOptions& options, RpcResult* info) {
  BTreeAggregateState st{lo, hi, 0, std::numeric_limits<uint64_t>::max(), 0, 0, 0};
  PULSE_RETURN_IF_ERROR(CallTyped(rpc, kRpcBTreeAggregate, tree.root(), st, options, info, "rpc BTree::AggregateRange"));
  return ToAggregate(st.sum, st.min, st.max, st.count);
}

Result<std::vector<ds::BTree::Entry>> Scan(RpcClient& rpc, const ds::BTree& tree, uint64_t lo, uint64_t hi,
                                           uint64_t limit, const RpcCallOptions& options, RpcResult* info) {
  BTreeScanState st{lo, hi, limit, 0};
  RpcResult local;
  RpcResult* result = info != nullptr ? info : &local;
  PULSE_RETURN_IF_ERROR(CallTyped(rpc, kRpcBTreeScan, tree.root(), st, options, result, "rpc BTree::Scan"));
  if (result->output.size() != st.emitted * 16)
    return Status::Internal(fmt::format("rpc BTree::Scan: {} output bytes for {} entries", result->output.size(),
                                        st.emitted));
  std::vector<ds::BTree::Entry> entries(st.emitted);
  for (uint64_t i = 0; i < st.emitted; ++i) {
    std::memcpy(&entries[i].first, result->output.data() + i * 16, 8);
    std::memcpy(&entries[i].second, result->output.data() + i * 16 + 8, 8);
  }
  return entries;
}

Result<std::optional<uint64_t>> Find(RpcClient& rpc, const ds::List& list, uint64_t value,
                                     const RpcCallOptions& options, RpcResult* info) {
  if (list.head() == 0) return std::optional<uint64_t>();
  ListFindState st{value, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(CallTyped(rpc, kRpcListFind, list.head(), st, options, info, "rpc List::Find"));
  if (!st.found) return std::optional<uint64_t>();
  return std::optional<uint64_t>(st.index);
}

Result<ds::Aggregate> AggregateRange(RpcClient& rpc, const ds::List& list, uint64_t lo, uint64_t hi,
                                     const RpcCallOptions& options, RpcResult* info) {
  if (list.head() == 0) return ds::Aggregate{};
  ListAggregateState st{lo, hi, 0, std::numeric_limits<uint64_t>::max(), 0, 0};
  PULSE_RETURN_IF_ERROR(CallTyped(rpc, kRpcListAggregate, list.head(), st, options, info, "rpc List::AggregateRange"));
  return ToAggregate(st.sum, st.min, st.max, st.count);
}

}  // namespace pulse::rpc
