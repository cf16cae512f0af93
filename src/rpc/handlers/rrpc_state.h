// RDMA-optimised RPC (seed 004 section 5.5; include/pulse/rpc_rrpc.h): the
// state of the kv_get_object handler, shared by the handler
// (kv_get_object.cc) and the client (src/rpc/rrpc_kv.cc).
#pragma once

#include <cstdint>

#include "kv/iterators/kv_layout.h"

namespace pulse::rpc {

// Phases of a kv_get_object call (RrpcKvState::phase).
inline constexpr uint64_t kRrpcWalking = 0;   // walking the key's bucket chain (kv_get's walk)
inline constexpr uint64_t kRrpcAtObject = 1;  // at the object the item names (the call's pointer)

struct RrpcKvState {
  pulse_kv_state kv;      // the GET's state (kv_layout.h); outcome PULSE_KV_HIT when the key is present
  uint64_t phase;         // kRrpcWalking / kRrpcAtObject: where a re-issued call resumes
  uint64_t inline_limit;  // in: payloads of at most this many bytes come back in the reply's output
  uint64_t object;        // out: the object's far address (its header)
  uint64_t length;        // out: the payload's bytes (the object header's length)
  uint64_t fingerprint;   // out: the object header's fingerprint
  uint64_t inlined;       // out: 1 if the payload is the reply's output, 0 if the caller reads it
};

}  // namespace pulse::rpc
