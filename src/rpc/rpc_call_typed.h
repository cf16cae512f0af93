// One RPC whose state is a struct, shared by the typed calls
// (src/rpc/rpc_ds.cc, src/rpc/rpc_apps.cc) and the bench's rpc systems.
#pragma once

#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "pulse/rpc.h"

namespace pulse::rpc {

// One call with a typed state; the final state comes back in `state`.
// TraversalStatusError naming `what` when the call faulted, Internal when
// the state came back the wrong size; RpcClient::Call's errors otherwise.
template <typename State>
inline Status CallTyped(RpcClient& rpc, uint16_t handler, uint64_t start, State& state, const RpcCallOptions& options,
                        RpcResult* info, std::string_view what) {
  auto r = rpc.Call(handler, start, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&state), sizeof(State)),
                    options);
  if (!r.ok()) return r.status();
  PULSE_RETURN_IF_ERROR(TraversalStatusError(r->status, what, r->fault_addr));
  if (r->state.size() != sizeof(State))
    return Status::Internal(fmt::format("{}: the reply's state has {} bytes, not {}", what, r->state.size(),
                                        sizeof(State)));
  std::memcpy(&state, r->state.data(), sizeof(State));
  if (info != nullptr) *info = std::move(*r);
  return Status::Ok();
}

}  // namespace pulse::rpc
