// The RPC baselines' service (`rpc`, `rpc-wimpy`, `cache-rpc`) as a memory
// node extension (memnode/extension.h): kAmRpcRequest in, kAmRpcReply out,
// the host and emulated core clocks in "hello" (rpc_host_ghz, rpc_core_ghz),
// the RpcService counters under "rpc" in "stats".  `pulse memnode` adds it
// to MemNodeServerOptions::extensions.
#pragma once

#include "memnode/extension.h"
#include "rpc/rpc_service.h"

namespace pulse::rpc {

// A factory building the service over the node's range table.  The service
// measures the host clock when built (RpcServiceOptions::host_ghz).
memnode::MemNodeExtensionFactory RpcExtension(const RpcServiceOptions& options);

}  // namespace pulse::rpc
