// kRpcKvGetObject: RDMA-optimised RPC (seed 004 section 5.5) for kv::Store
// items that name an object (include/pulse/rpc_rrpc.h): kv_get's walk, then
// the object's header; a payload of at most the caller's inline limit is
// appended to the reply's output, a larger one is left for the caller to
// read one-sidedly at the address the state returns.  A call whose object
// lies on another node stops there (phase kRrpcAtObject) and is re-issued
// to the owner, which resumes at the object.
#include "pulse/rpc.h"
#include "pulse/rpc_rrpc.h"
#include "rpc/handlers/kv_common.h"
#include "rpc/handlers/rrpc_state.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {
namespace {

// At the object `ptr`: its header, and the payload inline if it is small.
RpcOutcome AtObject(RpcMemory& memory, uint64_t ptr, RrpcKvState& st, std::vector<uint8_t>* output) {
  RrpcObjectHeader header;
  if (!memory.Load(ptr, &header)) return memory.Stopped();
  st.object = ptr;
  st.length = header.length;
  st.fingerprint = header.fingerprint;
  st.inlined = 0;
  if (header.length > st.inline_limit) return {};
  const uint8_t* payload = memory.Read(ptr + sizeof(RrpcObjectHeader), header.length);
  if (payload == nullptr) return memory.Stopped();
  output->insert(output->end(), payload, payload + header.length);
  st.inlined = 1;
  return {};
}

RpcOutcome KvGetObject(RpcMemory& memory, uint64_t ptr, std::span<uint8_t> state, std::vector<uint8_t>* output) {
  RrpcKvState st = StateAs<RrpcKvState>(state);
  RpcOutcome out;
  if (st.phase == kRrpcWalking) {
    out = kv_handlers::KvGetWalk(memory, ptr, st.kv);
    if (out.status == TraversalStatus::kDone && st.kv.outcome == PULSE_KV_HIT) {
      // The item's value is the object's address (its first value word).
      st.phase = kRrpcAtObject;
      ptr = st.kv.data[1 + st.kv.key_words];
    }
  }
  if (out.status == TraversalStatus::kDone && st.phase == kRrpcAtObject) out = AtObject(memory, ptr, st, output);
  st.kv.loads += memory.steps();
  StoreState(state, st);
  return out;
}

}  // namespace

extern const RpcHandler kRpcHandler_kv_get_object{kRpcKvGetObject, "kv_get_object", sizeof(RrpcKvState), KvGetObject};

}  // namespace pulse::rpc
