// The cluster's wire contract beyond traversal messages: active-message ids,
// the control operations every node understands, and the layout of the
// global far address space.  Shared by `pulse memnode`, `pulse switch`,
// `pulse cluster` and the CPU-node client.
//
// Topology: memory nodes and CPU nodes each open one UCX endpoint to the
// switch.  Traversal messages (kAmTraversal) go through the switch with
// routing "switch"; with routing "direct" (the default) the switch is the
// control plane only: CPU nodes send to the memory node owning cur_ptr,
// memory nodes send continuations to each other and final responses to the
// CPU node (docs/architecture.md section 6).
// CPU nodes also connect to every memory node directly for control
// (allocation) and one-sided reads and writes of far memory.
//
// Control messages (kAmControl) are JSON objects with "op" and "seq"; the
// answer (kAmControlReply) echoes "seq" and has "ok" (bool) and, when ok is
// false, "error" (a sentence naming the bad field) and "code" (the
// Status::Code as StatusCodeToWire numbers it: the caller gets the same code
// back, e.g. ResourceExhausted for a full pool, FailedPrecondition for a
// lock holder without a lease).  Operations:
//
//   to the switch
//     {"op":"register_memnode","node":N,"address":"host:port","base":B,"size":S}
//         -> {"routing":"direct"|"switch","table":{routing table}}
//                                    a memory node announces its pool
//     {"op":"hello"}                 a CPU node joins
//         -> {"cpu_node":C,"memnodes":[{"node":N,"address":"host:port","base":B,"size":S},...],
//             "routing":"direct"|"switch","table":{routing table}}
//   to a memory node
//     {"op":"hello"[,"cpu_node":C]}
//         -> {"node":N,"base":B,"size":S,"granularity":G}
//            naming C (the id the switch gave the CPU node) makes this
//            connection where the node sends that CPU node's final
//            responses under direct routing
//            also "rpc_host_ghz" (the host core's calibrated clock) and
//            "rpc_core_ghz" (the wimpy core rpc-wimpy calls emulate); no
//            remote key: keys are per allocation, for its tenant only
//     {"op":"alloc","bytes":L,"tenant":T,"perms":"rw"|"r", "session":S | "root":"name"}
//         -> {"base":A,"length":L',"rkey":"<hex>","remote_base":R}
//            a new range owned by tenant T (L' >= L, rounded up to the
//            node's granularity), belonging to session S (without either
//            field: the connection's own session) or durable under root
//            "name" of T (created if new); far address X in [A, A+L') is
//            remote address R + (X - A) for Get/Put with that key
//     {"op":"key","addr":X,"tenant":T[,"session":S]}
//         -> as alloc's answer, for the allocation holding X, if it is T's
//            (PermissionDenied otherwise, NotFound for no allocation);
//            naming S binds the connection to session S again
//     {"op":"free","base":A,"tenant":T}  -> {}
//     {"op":"persist","tenant":T,"session":S,"root":"name"[,"addr":X]}
//         -> {"durable_bytes":N}     S's allocations here become durable
//                                     under the root; X its address
//     {"op":"root_get","tenant":T,"root":"name"} -> {"addr":X}   (0: the root
//                                     has memory here but its address elsewhere)
//     {"op":"root_drop","tenant":T,"root":"name"}
//     {"op":"tenant_drop","tenant":T}
//         -> {"freed_bytes":N,"allocations":K}   frees the root's / all of T's memory
//     {"op":"end_session","tenant":T,"session":S} -> {"freed_bytes":N}
//     {"op":"lock","addr":A,"tenant":T,"holder":H,"mode":"shared"|"exclusive","lease_ms":L}
//         -> {"granted":bool}        reader-writer lock named by far address A
//                                     (in a range of tenant T), held by H until
//                                     L ms from now unless renewed; never waits
//     {"op":"lock_renew","addr":A,"tenant":T,"holder":H,"lease_ms":L} -> {}
//     {"op":"unlock","addr":A,"tenant":T,"holder":H}  -> {}
//   to any node
//     {"op":"stats"}    -> {"role":"switch"|"memnode","counters":{...}}
//                          a memnode's counters include "cpu_seconds", "rpc"
//                          (calls, exec_ns, spin_ns, host_ghz, ...), "tenants"
//                          ({"T":{"session_bytes","durable_bytes","allocations"}}),
//                          "sessions" and "roots"
//     {"op":"shutdown"} -> {}        the node answers, then exits cleanly
#pragma once

#include <cstdint>

namespace pulse {

// Active-message ids.
inline constexpr uint16_t kAmTraversal = 1;     // payload: EncodeMessage(TraversalMessage)
inline constexpr uint16_t kAmControl = 2;       // payload: JSON request
inline constexpr uint16_t kAmControlReply = 3;  // payload: JSON answer
// The switch pushes its routing table (src/protocol/routing_table.h,
// RoutingTable::ToJson) to every CPU node and memory node on each
// membership change; receivers keep it only if its version is newer.
inline constexpr uint16_t kAmRouting = 4;       // payload: JSON routing table
// Several messages that were ready for one destination at once, in one
// envelope (include/pulse/message_batch.h: EncodeBatch); each inner message
// is handled as if it had arrived alone on the envelope's inner_am
// (kAmTraversal).  A single message never travels in an envelope.
inline constexpr uint16_t kAmBatch = 5;         // payload: EncodeBatch(kAmTraversal, messages)
// The RPC baseline (include/pulse/rpc.h): a CPU node calls a native handler
// on a memory node directly, or through the switch, which only forwards
// (RpcPath::kSwitch).
inline constexpr uint16_t kAmRpcRequest = 20;   // payload: EncodeRpcRequest (src/protocol/rpc_message.h)
inline constexpr uint16_t kAmRpcReply = 21;     // payload: EncodeRpcReply

// Memory node N owns far addresses [FarBase(N), FarBase(N) + pool size).
// Node ids start at 0; the pool of one node is at most kFarSpan bytes.
inline constexpr uint64_t kFarSpan = uint64_t{1} << 40;
inline constexpr uint64_t FarBase(uint32_t node) { return (uint64_t{node} + 1) * kFarSpan; }
// The memory node whose span holds far address `addr`; -1 for an address
// below every span (FarBase(0)).  Whether the node exists is the caller's
// question.
inline constexpr int64_t NodeOfFarAddress(uint64_t addr) {
  return addr < kFarSpan ? -1 : static_cast<int64_t>(addr / kFarSpan - 1);
}

// Request ids: CPU node id in the top 24 bits, a per-node counter below.
inline constexpr uint64_t MakeRequestId(uint32_t cpu_node, uint64_t counter) {
  return (uint64_t{cpu_node} << 40) | (counter & ((uint64_t{1} << 40) - 1));
}

inline constexpr uint16_t kDefaultSwitchPort = 7100;

}  // namespace pulse
