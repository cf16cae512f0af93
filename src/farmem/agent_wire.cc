#include "farmem/agent_wire.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "protocol/byte_codec.h"

namespace pulse::farmem {
namespace {

using protocol::ByteReader;
using protocol::ByteWriter;

constexpr uint8_t kRequestMagic = 0x46;  // 'F'
constexpr uint8_t kReplyMagic = 0x66;    // 'f'
constexpr uint8_t kVersion = 2;  // 2: replies carry AgentStamps

bool KnownOp(uint8_t op) {
  return (op >= static_cast<uint8_t>(AgentOp::kCreateRegion) && op <= static_cast<uint8_t>(AgentOp::kStats)) ||
         (op >= static_cast<uint8_t>(AgentOp::kMemPreload) && op <= static_cast<uint8_t>(AgentOp::kMemWrite));
}

Status Malformed(const char* what, const std::string& why) {
  return Status::InvalidArgument(fmt::format("agent {}: {}", what, why));
}

Status CheckHeader(ByteReader& r, uint8_t magic, const char* what) {
  const uint8_t m = r.Get<uint8_t>();
  const uint8_t v = r.Get<uint8_t>();
  if (!r.ok()) return Malformed(what, "shorter than its header");
  if (m != magic) return Malformed(what, fmt::format("bad magic {:#x}", m));
  if (v != kVersion) return Malformed(what, fmt::format("unsupported version {}", v));
  return Status::Ok();
}

}  // namespace

std::vector<uint8_t> EncodeAgentRequest(const AgentRequest& q) {
  ByteWriter w;
  w.Put<uint8_t>(kRequestMagic);
  w.Put<uint8_t>(kVersion);
  w.Put<uint8_t>(static_cast<uint8_t>(q.op));
  w.Put<uint8_t>(static_cast<uint8_t>(q.cls));
  w.Put<uint8_t>(q.read_only ? 1 : 0);
  w.Put<uint64_t>(q.request_id);
  w.Put<uint64_t>(q.region);
  w.Put<uint64_t>(q.first);
  w.Put<uint32_t>(q.count);
  w.Put<uint32_t>(q.page_bytes);
  w.Put<uint32_t>(q.tenant);
  w.Put<uint64_t>(q.addr);
  w.Put<uint64_t>(q.bytes);
  w.PutString(q.name);
  w.PutString(q.file);
  w.PutBytes(q.data);
  return w.Take();
}

Result<AgentRequest> DecodeAgentRequest(std::span<const uint8_t> bytes) {
  ByteReader r(bytes);
  PULSE_RETURN_IF_ERROR(CheckHeader(r, kRequestMagic, "request"));
  AgentRequest q;
  const uint8_t op = r.Get<uint8_t>();
  const uint8_t cls = r.Get<uint8_t>();
  q.read_only = r.Get<uint8_t>() != 0;
  q.request_id = r.Get<uint64_t>();
  q.region = r.Get<uint64_t>();
  q.first = r.Get<uint64_t>();
  q.count = r.Get<uint32_t>();
  q.page_bytes = r.Get<uint32_t>();
  q.tenant = r.Get<uint32_t>();
  q.addr = r.Get<uint64_t>();
  q.bytes = r.Get<uint64_t>();
  q.name = r.GetString(kMaxAgentStringBytes);
  q.file = r.GetString(kMaxAgentStringBytes);
  q.data = r.GetBytes(UINT32_MAX);
  if (!r.ok()) return Malformed("request", fmt::format("truncated or oversized field in {} bytes", bytes.size()));
  if (!r.at_end()) return Malformed("request", "trailing bytes");
  if (!KnownOp(op)) return Malformed("request", fmt::format("unknown op {}", op));
  if (cls > static_cast<uint8_t>(PageClass::kStaticLoad))
    return Malformed("request", fmt::format("unknown page class {}", cls));
  q.op = static_cast<AgentOp>(op);
  q.cls = static_cast<PageClass>(cls);
  return q;
}

std::vector<uint8_t> EncodeAgentReply(const AgentReply& a) {
  ByteWriter w;
  w.Put<uint8_t>(kReplyMagic);
  w.Put<uint8_t>(kVersion);
  w.Put<uint64_t>(a.request_id);
  w.Put<uint32_t>(StatusCodeToWire(a.status.code()));
  w.Put<uint64_t>(a.value);
  w.Put<uint64_t>(a.stamps.received_ns);
  w.Put<uint64_t>(a.stamps.replied_ns);
  w.PutString(a.status.message());
  w.PutBytes(a.data);
  return w.Take();
}

Result<AgentReplyView> DecodeAgentReplyView(std::span<const uint8_t> bytes) {
  ByteReader r(bytes);
  PULSE_RETURN_IF_ERROR(CheckHeader(r, kReplyMagic, "reply"));
  AgentReplyView a;
  a.request_id = r.Get<uint64_t>();
  const uint32_t code = r.Get<uint32_t>();
  a.value = r.Get<uint64_t>();
  a.stamps.received_ns = r.Get<uint64_t>();
  a.stamps.replied_ns = r.Get<uint64_t>();
  std::string message = r.GetString(kMaxAgentStringBytes);
  const uint32_t length = r.Get<uint32_t>();
  if (!r.ok() || r.remaining() < length)
    return Malformed("reply", fmt::format("truncated or oversized field in {} bytes", bytes.size()));
  if (r.remaining() > length) return Malformed("reply", "trailing bytes");
  a.data = bytes.subspan(bytes.size() - length);
  // Code 0 is success; StatusFromWire rebuilds errors only.
  a.status = code == 0 ? Status::Ok() : StatusFromWire(code, std::move(message));
  return a;
}

AgentReply ReplyOf(AgentReplyView view, bool with_data) {
  AgentReply a;
  a.request_id = view.request_id;
  a.status = std::move(view.status);
  a.value = view.value;
  a.stamps = view.stamps;
  if (with_data) a.data.assign(view.data.begin(), view.data.end());
  return a;
}

Result<AgentReply> DecodeAgentReply(std::span<const uint8_t> bytes) {
  PULSE_ASSIGN_OR_RETURN(AgentReplyView v, DecodeAgentReplyView(bytes));
  return ReplyOf(std::move(v));
}

void SendPagesEagerly(net::WorkerOptions* worker) {
  if (getenv("UCX_RNDV_THRESH") != nullptr) return;
  for (const auto& [name, value] : worker->ucx_config)
    if (name == "RNDV_THRESH") return;
  worker->ucx_config.emplace_back("RNDV_THRESH", std::to_string(kAgentEagerBytes));
}

uint64_t AgentClockNanos() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

const char* PageClassName(PageClass cls) {
  switch (cls) {
    case PageClass::kOnDemand: return "on_demand";
    case PageClass::kPrefetch: return "prefetch";
    case PageClass::kWriteBack: return "write_back";
    case PageClass::kStaticLoad: return "static_load";
  }
  return "unknown";
}

}  // namespace pulse::farmem
