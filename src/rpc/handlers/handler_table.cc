// The registry of native RPC handlers.  To add one: define
// `extern const pulse::rpc::RpcHandler kRpcHandler_<name>` in its own file
// (see src/rpc/rpc_handler.h) and add `X(<name>)` below.
#include "rpc/rpc_handler.h"

#define PULSE_RPC_HANDLERS(X) \
  X(umap_find)                \
  X(btree_lower_bound)        \
  X(btree_aggregate)          \
  X(btree_scan)               \
  X(list_find)                \
  X(list_aggregate)           \
  X(wt_scan)                  \
  X(tsv_aggregate)            \
  X(kv_get)                   \
  X(kv_put)                   \
  X(kv_delete)                \
  X(kv_get_object)

namespace pulse::rpc {

#define PULSE_RPC_DECLARE(name) extern const RpcHandler kRpcHandler_##name;
PULSE_RPC_HANDLERS(PULSE_RPC_DECLARE)
#undef PULSE_RPC_DECLARE

namespace {
#define PULSE_RPC_ENTRY(name) &kRpcHandler_##name,
const RpcHandler* const kHandlers[] = {PULSE_RPC_HANDLERS(PULSE_RPC_ENTRY)};
#undef PULSE_RPC_ENTRY

}  // namespace

const RpcHandler* FindRpcHandler(uint16_t id) {
  for (const RpcHandler* h : kHandlers)  // a handful: a scan beats a map
    if (h->id == id) return h;
  return nullptr;
}
std::span<const RpcHandler* const> RpcHandlers() { return kHandlers; }

}  // namespace pulse::rpc
