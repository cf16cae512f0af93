// pulse::kv::Store's operations as RPCs (the `rpc` and `rpc-wimpy` systems
// of `pulse bench kv`, issue 15, seed 002 section V): a Store::Runner that
// sends each GET, PUT and DELETE to the native handlers kRpcKvGet,
// kRpcKvPut and kRpcKvDelete (include/pulse/rpc.h), which walk the same
// buckets and items on the memory node's CPU.  A call that faults ends its
// operation with the fault's error (TraversalStatusError).
//
// `rpc` must outlive the store's use of the runner, and must be created
// with RpcOptions::max_attempts = 1: PUT and DELETE write, and a
// retransmitted one could be applied twice.
//
// Thread-safety: as RpcClient (one thread).
#pragma once

#include "pulse/kv/store.h"
#include "pulse/rpc.h"

namespace pulse::rpc {

kv::Store::Runner KvStoreRunner(RpcClient* rpc);

}  // namespace pulse::rpc
