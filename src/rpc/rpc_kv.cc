// pulse::kv::Store's operations as RPCs (include/pulse/rpc_kv.h).
#include "pulse/rpc_kv.h"

#include <utility>

namespace pulse::rpc {

kv::Store::Runner KvStoreRunner(RpcClient* rpc) {
  kv::Store::Runner runner;
  runner.issue = [rpc](kv::Store::OpKind kind, uint64_t start, std::span<const uint8_t> state,
                       std::function<void(Result<std::vector<uint8_t>>)> done) {
    const uint16_t handler = kind == kv::Store::OpKind::kGet   ? kRpcKvGet
                             : kind == kv::Store::OpKind::kPut ? kRpcKvPut
                                                               : kRpcKvDelete;
    rpc->CallAsync(handler, start, state, {}, [done = std::move(done)](Result<RpcResult> a) {
      if (!a.ok()) return done(a.status());
      if (a->status != TraversalStatus::kDone) return done(TraversalStatusError(a->status, "kv store rpc", a->fault_addr));
      done(std::move(a->state));
    });
  };
  runner.wait_all = [rpc](std::chrono::milliseconds timeout) { return rpc->WaitAll(timeout); };
  return runner;
}

}  // namespace pulse::rpc
