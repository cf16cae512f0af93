// The pulse::ds read operations as RPCs (the `rpc` and `rpc-wimpy`
// baselines): the same answers as the structures' own offloaded traversals,
// computed by native handlers on the memory nodes (include/pulse/rpc.h).
// Each returns the answer and, in `info` when given, the call's RpcResult
// (issues, node crossings, node time).  Errors: those of RpcClient::Call, and
// Internal naming the operation when the traversal faulted.
//
// Thread-safety: as RpcClient (one thread).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pulse/ds/aggregate.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/list.h"
#include "pulse/ds/unordered_map.h"
#include "pulse/rpc.h"

namespace pulse::rpc {

// UnorderedMap::Find: one call from the bucket slot (the memory node reads
// the chain's head), so a lookup is one round trip when the chain is local.
Result<std::optional<uint64_t>> Find(RpcClient& rpc, const ds::UnorderedMap& map, uint64_t key,
                                     const RpcCallOptions& options = {}, RpcResult* info = nullptr);

// BTree::LowerBound, AggregateRange and Scan (entries in [lo, hi], at most
// limit), each one call from the root.
Result<std::optional<ds::BTree::Entry>> LowerBound(RpcClient& rpc, const ds::BTree& tree, uint64_t key,
                                                   const RpcCallOptions& options = {}, RpcResult* info = nullptr);
Result<ds::Aggregate> AggregateRange(RpcClient& rpc, const ds::BTree& tree, uint64_t lo, uint64_t hi,
                                     const RpcCallOptions& options = {}, RpcResult* info = nullptr);
Result<std::vector<ds::BTree::Entry>> Scan(RpcClient& rpc, const ds::BTree& tree, uint64_t lo, uint64_t hi,
                                           uint64_t limit, const RpcCallOptions& options = {},
                                           RpcResult* info = nullptr);

// List::Find (the position of the first element equal to value) and
// List::AggregateRange.
Result<std::optional<uint64_t>> Find(RpcClient& rpc, const ds::List& list, uint64_t value,
                                     const RpcCallOptions& options = {}, RpcResult* info = nullptr);
Result<ds::Aggregate> AggregateRange(RpcClient& rpc, const ds::List& list, uint64_t lo, uint64_t hi,
                                     const RpcCallOptions& options = {}, RpcResult* info = nullptr);

}  // namespace pulse::rpc
