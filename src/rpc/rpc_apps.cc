#include "pulse/rpc_apps.h"

#include <cstring>

#include <fmt/format.h>

#include "pulse/apps/wiredtiger.h"
#include "rpc/handlers/app_states.h"
#include "rpc/rpc_call_typed.h"
#include "rpc/rpc_apps_internal.h"

namespace pulse::rpc {

Result<std::vector<apps::ScanRecord>> WtScan(RpcClient& rpc, uint64_t root, uint64_t start, uint32_t count,
                                             const RpcCallOptions& options, RpcResult* info) {
  if (count == 0 || count > apps::kWiredTigerMaxScan)
    return Status::InvalidArgument(
        fmt::format("rpc WtScan: count {} is outside 1..{}", count, apps::kWiredTigerMaxScan));
  WtScanState st{};
  st.start = start;
  st.limit = count;
  RpcResult r;
  PULSE_RETURN_IF_ERROR(CallTyped(rpc, kRpcWtScan, root, st, options, &r, "rpc WtScan"));
  if (r.output.size() != st.count * 2 * sizeof(uint64_t))
    return Status::Internal(fmt::format("rpc WtScan: {} output bytes for {} records", r.output.size(), st.count));
  std::vector<apps::ScanRecord> records(st.count);
  for (uint64_t i = 0; i < st.count; ++i) {
    std::memcpy(&records[i].key, r.output.data() + 16 * i, 8);
    std::memcpy(&records[i].checksum, r.output.data() + 16 * i + 8, 8);
  }
  if (info != nullptr) *info = std::move(r);
  return records;
}

Result<ds::Aggregate> TsvAggregate(RpcClient& rpc, const apps::TsvTree& tree, uint64_t lo, uint64_t hi,
                                   const RpcCallOptions& options, RpcResult* info) {
  TsvAggregateState st = TsvQueryState(lo, hi);
  PULSE_RETURN_IF_ERROR(CallTyped(rpc, kRpcTsvAggregate, tree.root(), st, options, info, "rpc TsvAggregate"));
  return TsvAnswerOf(st.agg);
}

}  // namespace pulse::rpc
