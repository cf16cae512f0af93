#include "protocol/rpc_message.h"

#include <cstring>
#include <string>

#include <fmt/format.h>

namespace pulse::rpc {
namespace {

constexpr uint8_t kRequestMagic = 0x52;
constexpr uint8_t kReplyMagic = 0x53;
constexpr uint8_t kVersion = 1;

// Fixed-offset fields of the headers.
template <typename T>
void StoreAt(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}
template <typename T>
T LoadAt(std::span<const uint8_t> b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

Status Bad(const char* which, const std::string& what) {
  return Status::InvalidArgument(fmt::format("rpc {}: {}", which, what));
}

}  // namespace

std::vector<uint8_t> EncodeRpcRequest(const RpcRequest& r) {
  std::vector<uint8_t> b(kRpcRequestHeaderBytes + r.state.size());
  StoreAt<uint8_t>(b, 0, kRequestMagic);
  StoreAt<uint8_t>(b, 1, kVersion);
  StoreAt<uint16_t>(b, 2, r.handler);
  StoreAt<uint32_t>(b, 4, r.flags);
  StoreAt<uint64_t>(b, 8, r.request_id);
  StoreAt<uint32_t>(b, 16, r.tenant);
  StoreAt<uint32_t>(b, 20, static_cast<uint32_t>(r.state.size()));
  StoreAt<uint64_t>(b, 24, r.start);
  if (!r.state.empty()) std::memcpy(b.data() + kRpcRequestHeaderBytes, r.state.data(), r.state.size());
  return b;
}

bool PeekRpcRequestId(std::span<const uint8_t> b, uint64_t* request_id, uint16_t* handler) {
  if (b.size() < kRpcRequestHeaderBytes || b[0] != kRequestMagic || b[1] != kVersion) return false;
  *handler = LoadAt<uint16_t>(b, 2);
  *request_id = LoadAt<uint64_t>(b, 8);
  return true;
}

bool PeekRpcRoute(std::span<const uint8_t> b, uint64_t* request_id, uint64_t* start) {
  if (b.size() < kRpcRequestHeaderBytes || b[0] != kRequestMagic || b[1] != kVersion) return false;
  *request_id = LoadAt<uint64_t>(b, 8);
  *start = LoadAt<uint64_t>(b, 24);
  return true;
}

bool PeekRpcReplyId(std::span<const uint8_t> b, uint64_t* request_id) {
  if (b.size() < kRpcReplyHeaderBytes || b[0] != kReplyMagic || b[1] != kVersion) return false;
  *request_id = LoadAt<uint64_t>(b, 8);
  return true;
}

bool SetRpcRequestId(std::span<uint8_t> b, uint64_t request_id) {
  if (b.size() < kRpcRequestHeaderBytes || b[0] != kRequestMagic || b[1] != kVersion) return false;
  std::memcpy(b.data() + 8, &request_id, sizeof(request_id));
  return true;
}

bool SetRpcRequestTenant(std::span<uint8_t> b, uint32_t tenant) {
  if (b.size() < kRpcRequestHeaderBytes || b[0] != kRequestMagic || b[1] != kVersion) return false;
  std::memcpy(b.data() + 16, &tenant, sizeof(tenant));
  return true;
}

Result<RpcRequest> DecodeRpcRequest(std::span<const uint8_t> b, uint32_t max_bytes) {
  if (b.size() < kRpcRequestHeaderBytes)
    return Bad("request", fmt::format("{} bytes is shorter than the {}-byte header", b.size(), kRpcRequestHeaderBytes));
  if (b[0] != kRequestMagic) return Bad("request", fmt::format("bad magic {:#x}", b[0]));
  if (b[1] != kVersion) return Bad("request", fmt::format("unsupported version {}", b[1]));
  RpcRequest r;
  r.handler = LoadAt<uint16_t>(b, 2);
  r.flags = LoadAt<uint32_t>(b, 4);
  r.request_id = LoadAt<uint64_t>(b, 8);
  r.tenant = LoadAt<uint32_t>(b, 16);
  const uint32_t state_bytes = LoadAt<uint32_t>(b, 20);
  r.start = LoadAt<uint64_t>(b, 24);
  const uint32_t known = kRpcFlagWimpy | (kRpcMaxCoreMhz << kRpcFlagCoreMhzShift);
  if (r.flags & ~known) return Bad("request", fmt::format("unknown flags {:#x}", r.flags));
  if ((r.flags >> kRpcFlagCoreMhzShift) != 0 && !(r.flags & kRpcFlagWimpy))
    return Bad("request", fmt::format("flags {:#x} name a core clock without the wimpy flag", r.flags));
  if (state_bytes > max_bytes) return Bad("request", fmt::format("state_bytes {} exceeds {}", state_bytes, max_bytes));
  if (b.size() != kRpcRequestHeaderBytes + state_bytes)
    return Bad("request", fmt::format("state_bytes {} does not match the {} bytes after the header", state_bytes,
                                      b.size() - kRpcRequestHeaderBytes));
  r.state.assign(b.begin() + kRpcRequestHeaderBytes, b.end());
  return r;
}

std::vector<uint8_t> EncodeRpcReply(const RpcReply& r) {
  std::vector<uint8_t> b(kRpcReplyHeaderBytes + r.state.size() + r.output.size());
  StoreAt<uint8_t>(b, 0, kReplyMagic);
  StoreAt<uint8_t>(b, 1, kVersion);
  StoreAt<uint8_t>(b, 2, static_cast<uint8_t>(r.status));
  StoreAt<uint16_t>(b, 4, r.handler);
  StoreAt<uint64_t>(b, 8, r.request_id);
  StoreAt<uint64_t>(b, 16, r.next_ptr);
  StoreAt<uint64_t>(b, 24, r.fault_addr);
  StoreAt<uint32_t>(b, 32, r.exec_ns);
  StoreAt<uint32_t>(b, 36, r.steps);
  StoreAt<uint32_t>(b, 40, static_cast<uint32_t>(r.state.size()));
  StoreAt<uint32_t>(b, 44, static_cast<uint32_t>(r.output.size()));
  uint8_t* p = b.data() + kRpcReplyHeaderBytes;
  if (!r.state.empty()) std::memcpy(p, r.state.data(), r.state.size());
  if (!r.output.empty()) std::memcpy(p + r.state.size(), r.output.data(), r.output.size());
  return b;
}

Result<RpcReply> DecodeRpcReply(std::span<const uint8_t> b, uint32_t max_bytes) {
  if (b.size() < kRpcReplyHeaderBytes)
    return Bad("reply", fmt::format("{} bytes is shorter than the {}-byte header", b.size(), kRpcReplyHeaderBytes));
  if (b[0] != kReplyMagic) return Bad("reply", fmt::format("bad magic {:#x}", b[0]));
  if (b[1] != kVersion) return Bad("reply", fmt::format("unsupported version {}", b[1]));
  RpcReply r;
  const uint8_t status = b[2];
  if (status > static_cast<uint8_t>(TraversalStatus::kNodeUnavailable))
    return Bad("reply", fmt::format("unknown status {}", status));
  r.status = static_cast<TraversalStatus>(status);
  r.handler = LoadAt<uint16_t>(b, 4);
  r.request_id = LoadAt<uint64_t>(b, 8);
  r.next_ptr = LoadAt<uint64_t>(b, 16);
  r.fault_addr = LoadAt<uint64_t>(b, 24);
  r.exec_ns = LoadAt<uint32_t>(b, 32);
  r.steps = LoadAt<uint32_t>(b, 36);
  const uint64_t state_bytes = LoadAt<uint32_t>(b, 40);
  const uint64_t output_bytes = LoadAt<uint32_t>(b, 44);
  if (state_bytes > max_bytes || output_bytes > max_bytes)
    return Bad("reply", fmt::format("state_bytes {} or output_bytes {} exceeds {}", state_bytes, output_bytes, max_bytes));
  if (b.size() != kRpcReplyHeaderBytes + state_bytes + output_bytes)
    return Bad("reply", fmt::format("state_bytes {} + output_bytes {} do not match the {} bytes after the header",
                                    state_bytes, output_bytes, b.size() - kRpcReplyHeaderBytes));
  auto body = b.subspan(kRpcReplyHeaderBytes);
  r.state.assign(body.begin(), body.begin() + state_bytes);
  r.output.assign(body.begin() + state_bytes, body.end());
  return r;
}

}  // namespace pulse::rpc
