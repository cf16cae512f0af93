// The applications' traversals as RPCs (the `rpc` and `rpc-wimpy` systems
// of `pulse bench app`): the same answers as their pulse iterators, from
// native handlers on the memory nodes (include/pulse/rpc.h).  Each is one
// call from the structure's root, re-issued by the CPU node at memory-node
// boundaries; `info`, when given, receives the call's RpcResult (issues,
// node crossings, node time).  Errors: those of RpcClient::Call, and
// Internal naming the operation when the traversal faulted.
//
// Thread-safety: as RpcClient (one thread).
#pragma once

#include <cstdint>
#include <vector>

#include "pulse/apps/app_system.h"
#include "pulse/apps/btrdb.h"
#include "pulse/ds/aggregate.h"
#include "pulse/rpc.h"

namespace pulse::rpc {

// apps::OffloadedScan's answer (kRpcWtScan): the first `count` records with
// keys >= start of the WiredTiger tree at `root`, each with its value's
// checksum.  InvalidArgument if count is 0 or over apps::kWiredTigerMaxScan.
Result<std::vector<apps::ScanRecord>> WtScan(RpcClient& rpc, uint64_t root, uint64_t start, uint32_t count,
                                             const RpcCallOptions& options = {}, RpcResult* info = nullptr);

// apps::TsvTree::Aggregate's answer (kRpcTsvAggregate): sum/min/max/count
// of the readings with ticks in [lo, hi], using the per-child aggregates.
Result<ds::Aggregate> TsvAggregate(RpcClient& rpc, const apps::TsvTree& tree, uint64_t lo, uint64_t hi,
                                   const RpcCallOptions& options = {}, RpcResult* info = nullptr);

}  // namespace pulse::rpc
