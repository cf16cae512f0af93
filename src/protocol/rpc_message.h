// The wire format of the RPC baseline (kAmRpcRequest / kAmRpcReply in
// include/pulse/cluster.h).  Little-endian.
//
// Request, 32-byte header then the state:
//   u8 magic 0x52 ('R'), u8 version = 1, u16 handler, u32 flags (RpcFlags),
//   u64 request_id, u32 tenant, u32 state_bytes, u64 start, state.
// Reply, 48-byte header then the state and the output:
//   u8 magic 0x53 ('S'), u8 version = 1, u8 status (TraversalStatus),
//   u8 reserved = 0, u16 handler, u16 reserved = 0, u64 request_id,
//   u64 next_ptr, u64 fault_addr, u32 exec_ns, u32 steps, u32 state_bytes,
//   u32 output_bytes, state, output.
// A reply with status kFaultBadRequest carries the memory node's error
// message as its output.  Decoding checks every field and names the bad one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pulse/status.h"
#include "pulse/traversal.h"

namespace pulse::rpc {

enum RpcFlags : uint32_t {
  kRpcFlagWimpy = 1,  // run slowed down to the node's --rpc-core-ghz
};
// Bits 16-31 of flags: with kRpcFlagWimpy, the emulated core's clock in MHz
// the caller asks for (0: the node's --rpc-core-ghz).
inline constexpr uint32_t kRpcFlagCoreMhzShift = 16;
inline constexpr uint32_t kRpcMaxCoreMhz = 0xffff;

inline constexpr size_t kRpcRequestHeaderBytes = 32;
inline constexpr size_t kRpcReplyHeaderBytes = 48;

struct RpcRequest {
  uint16_t handler = 0;
  uint32_t flags = 0;
  uint64_t request_id = 0;
  uint32_t tenant = 0;
  uint64_t start = 0;
  std::vector<uint8_t> state;
};

struct RpcReply {
  TraversalStatus status = TraversalStatus::kDone;
  uint16_t handler = 0;
  uint64_t request_id = 0;
  uint64_t next_ptr = 0;    // where to resume (kNotLocal, kContinue)
  uint64_t fault_addr = 0;  // the address a fault is about
  uint32_t exec_ns = 0;     // handler time on the memory node, slowdown included
  uint32_t steps = 0;       // far objects the handler read
  std::vector<uint8_t> state;
  std::vector<uint8_t> output;
};

std::vector<uint8_t> EncodeRpcRequest(const RpcRequest& request);
std::vector<uint8_t> EncodeRpcReply(const RpcReply& reply);

// InvalidArgument naming the field on malformed or truncated input; states
// or outputs over max_bytes are rejected.
Result<RpcRequest> DecodeRpcRequest(std::span<const uint8_t> bytes, uint32_t max_bytes);
Result<RpcReply> DecodeRpcReply(std::span<const uint8_t> bytes, uint32_t max_bytes);

// The request id alone, if the bytes start with a request header (so that
// a request with a bad body can still be answered).
bool PeekRpcRequestId(std::span<const uint8_t> bytes, uint64_t* request_id, uint16_t* handler);

// What the switch needs to forward a message without decoding its body
// (RpcPath::kSwitch): a request's id and start pointer, or a reply's id.
// False if the bytes do not start with such a header.
bool PeekRpcRoute(std::span<const uint8_t> request, uint64_t* request_id, uint64_t* start);
bool PeekRpcReplyId(std::span<const uint8_t> reply, uint64_t* request_id);
// Rewrites a request's id in place (the switch sets its CPU-node bits from
// the connection the request came on).  False if it is no request header.
bool SetRpcRequestId(std::span<uint8_t> request, uint64_t request_id);
// Rewrites a request's tenant in place (the switch sets the tenant the
// connection proved, whatever the request claims).  False if it is no
// request header.
bool SetRpcRequestTenant(std::span<uint8_t> request, uint32_t tenant);

}  // namespace pulse::rpc
