// Fuzz target: an RPC request as the memory node's RPC service handles it
// (src/rpc/rpc_service.h, the `rpc` baselines' extension), over TenantMemory.
// Input: byte 0 even: the rest is the request's wire bytes as they arrive;
// odd: the rest builds a well-formed request (a registered handler, a state
// of its size, a start address in or near the ranges, either tenant), so
// that the handlers themselves are reached.
// Checks: an answer exactly when the bytes carry a request id, and one that
// decodes and names that request; a handler's answer carries a state of its
// size and reads at most max_steps objects; handlers never write; and what
// a tenant gets does not depend on memory it may not read (the same request
// over a copy with every such range scrambled gets the same answer).
#include <cstring>
#include <optional>
#include <vector>

#include "fuzz_check.h"
#include "protocol/rpc_message.h"
#include "pulse/rpc.h"
#include "rpc/rpc_handler.h"
#include "rpc/rpc_service.h"
#include "tenant_memory.h"

namespace pulse::fuzz {
namespace {

// The span TenantMemory's ranges lie in: addresses in it but in no range are
// invalid pointers, those outside belong to another node.
constexpr uint64_t kSpanBase = 0x10000;
constexpr uint64_t kSpanSize = 0x48000;
constexpr uint32_t kMaxSteps = 64;  // bounded work per input

rpc::RpcServiceOptions Options() {
  rpc::RpcServiceOptions o;
  // A fixed, tiny host clock: no calibration, and a "wimpy" call is never
  // stretched (the slowdown is host_ghz / core_ghz <= 1 for any clock a
  // request can name), so no input spins.
  o.host_ghz = 0.001;
  o.max_steps = kMaxSteps;
  return o;
}

// A well-formed request from the input bytes.
std::vector<uint8_t> BuildRequest(std::span<const uint8_t> in, const TenantMemory& memory) {
  auto byte = [&](size_t i) -> uint8_t { return i < in.size() ? in[i] : 0; };
  const auto handlers = rpc::RpcHandlers();
  const rpc::RpcHandler* h = handlers[byte(0) % handlers.size()];
  rpc::RpcRequest r;
  r.handler = h->id;
  r.tenant = byte(1) & 1 ? kTenantB : kTenantA;
  r.flags = byte(1) & 2 ? rpc::kRpcFlagWimpy | (uint32_t{byte(2)} << rpc::kRpcFlagCoreMhzShift) : 0;
  r.request_id = 0x1000 + byte(3);
  r.start = memory.PickAddress(byte(4), byte(5));
  // The state: words like the memory's (pointers, small numbers), then the
  // input's own bytes over them.
  r.state.resize(h->state_bytes);
  memory.FillWords(byte(6), &r.state);
  for (size_t i = 0; i < r.state.size() && 7 + i < in.size(); ++i) r.state[i] ^= in[7 + i];
  return rpc::EncodeRpcRequest(r);
}

struct Answer {
  std::optional<std::vector<uint8_t>> bytes;
  uint64_t malformed = 0;
};

Answer Handle(TenantMemory* memory, std::span<const uint8_t> payload) {
  const RangeTable table = memory->Table();
  rpc::RpcService service(&table, kSpanBase, kSpanSize, Options());
  Answer a;
  a.bytes = service.Handle(payload);
  a.malformed = service.counters().malformed;
  return a;
}

bool SameReply(const rpc::RpcReply& a, const rpc::RpcReply& b) {  // all but exec_ns (a time)
  return a.status == b.status && a.handler == b.handler && a.request_id == b.request_id &&
         a.next_ptr == b.next_ptr && a.fault_addr == b.fault_addr && a.steps == b.steps && a.state == b.state &&
         a.output == b.output;
}

}  // namespace

void FuzzRpcMessage(std::span<const uint8_t> data) {
  if (data.empty()) return;
  const TenantMemory original;
  const std::vector<uint8_t> payload = data[0] & 1 ? BuildRequest(data.subspan(1), original)
                                                   : std::vector<uint8_t>(data.begin() + 1, data.end());
  TenantMemory memory = original;
  const Answer first = Handle(&memory, payload);
  // The KV store's PUT and DELETE handlers write, within what the request's
  // tenant may write; every other handler only reads.
  const auto writer = rpc::DecodeRpcRequest(payload, Options().max_state_bytes);
  if (writer.ok() && (writer->handler == kRpcKvPut || writer->handler == kRpcKvDelete)) {
    memory.CheckUntouched(original, writer->tenant, "a KV handler wrote memory its tenant may not write");
  } else {
    memory.CheckSame(original, "RPC handlers only read, but memory changed");
  }

  uint64_t peeked_id = 0;
  uint16_t peeked_handler = 0;
  const bool has_id = rpc::PeekRpcRequestId(payload, &peeked_id, &peeked_handler);
  PULSE_FUZZ_CHECK(first.bytes.has_value() == has_id, "answered {} a message {} a request id",
                   first.bytes ? "" : "not", has_id ? "with" : "without");
  if (!first.bytes) {
    PULSE_FUZZ_CHECK(first.malformed == 1, "an unanswered message not counted as malformed");
    return;
  }
  auto reply = rpc::DecodeRpcReply(*first.bytes, 1u << 24);
  PULSE_FUZZ_CHECK(reply.ok(), "the answer does not decode: {}", reply.status().ToString());
  PULSE_FUZZ_CHECK(reply->request_id == peeked_id && reply->handler == peeked_handler,
                   "the answer names request {} handler {}, not {} {}", reply->request_id, reply->handler,
                   peeked_id, peeked_handler);
  PULSE_FUZZ_CHECK(reply->steps <= kMaxSteps, "{} steps, over the limit of {}", reply->steps, kMaxSteps);

  auto request = rpc::DecodeRpcRequest(payload, Options().max_state_bytes);
  if (reply->status == TraversalStatus::kFaultBadRequest) {
    PULSE_FUZZ_CHECK(!reply->output.empty(), "a bad request answered without a reason");
  } else {
    // A handler ran: the request was well-formed, for a registered handler.
    PULSE_FUZZ_CHECK(request.ok(), "a malformed request ran a handler: {}", request.status().ToString());
    const rpc::RpcHandler* h = rpc::FindRpcHandler(request->handler);
    PULSE_FUZZ_CHECK(h != nullptr, "handler {} ran but is not registered", request->handler);
    PULSE_FUZZ_CHECK(reply->state.size() == h->state_bytes, "handler {} answered a {}-byte state, not {}",
                     h->name, reply->state.size(), h->state_bytes);
    if (reply->status == TraversalStatus::kNotLocal)
      PULSE_FUZZ_CHECK(reply->next_ptr - kSpanBase >= kSpanSize, "handler {} stopped as not local at {:#x}, "
                       "inside this node's span", h->name, reply->next_ptr);
  }

  // Non-interference: the same request where the tenant may not look.
  if (request.ok()) {
    TenantMemory scrambled = original;
    scrambled.ScrambleHiddenFrom(request->tenant, data.size());
    const Answer second = Handle(&scrambled, payload);
    PULSE_FUZZ_CHECK(second.bytes.has_value(), "the same request went unanswered");
    auto again = rpc::DecodeRpcReply(*second.bytes, 1u << 24);
    PULSE_FUZZ_CHECK(again.ok() && SameReply(*reply, *again),
                     "tenant {}'s answer ({}, {} steps) depends on memory it may not read ({}, {} steps)",
                     request->tenant, TraversalStatusName(reply->status), reply->steps,
                     again.ok() ? TraversalStatusName(again->status) : "undecodable", again.ok() ? again->steps : 0);
  }
}

}  // namespace pulse::fuzz
