#include "rpc/rpc_service.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <fmt/format.h>

#include "rpc/core_clock.h"
#include "rpc/rpc_handler.h"
#include "protocol/rpc_message.h"

namespace pulse::rpc {

using Clock = std::chrono::steady_clock;

RpcService::RpcService(const RangeTable* table, uint64_t span_base, uint64_t span_size,
                       const RpcServiceOptions& options)
    : table_(table),
      span_base_(span_base),
      span_size_(span_size),
      options_(options),
      host_ghz_(options.host_ghz > 0 ? options.host_ghz : MeasureHostGhz()) {}

std::optional<std::vector<uint8_t>> RpcService::Handle(std::span<const uint8_t> payload,
                                                       const std::function<Status(TenantId)>& authorize) {
  RpcReply reply;
  auto bad = [&](const std::string& why) {
    ++counters_.bad_requests;
    reply.status = TraversalStatus::kFaultBadRequest;
    reply.output.assign(why.begin(), why.end());
    return EncodeRpcReply(reply);
  };
  Result<RpcRequest> request = DecodeRpcRequest(payload, options_.max_state_bytes);
  if (!request.ok()) {
    if (!PeekRpcRequestId(payload, &reply.request_id, &reply.handler)) {
      ++counters_.malformed;
      return std::nullopt;
    }
    return bad(request.status().message());
  }
  reply.request_id = request->request_id;
  reply.handler = request->handler;
  if (authorize) {
    Status allowed = authorize(request->tenant);
    if (!allowed.ok()) {
      ++counters_.refused;
      reply.status = TraversalStatus::kFaultProtection;
      reply.output.assign(allowed.message().begin(), allowed.message().end());
      return EncodeRpcReply(reply);
    }
  }
  const RpcHandler* handler = FindRpcHandler(request->handler);
  if (handler == nullptr) return bad(fmt::format("rpc: no handler with id {}", request->handler));
  if (request->state.size() != handler->state_bytes)
    return bad(fmt::format("rpc: handler {} ({}) takes a {}-byte state, not {}", handler->id, handler->name,
                           handler->state_bytes, request->state.size()));
  const uint32_t asked_mhz = request->flags >> kRpcFlagCoreMhzShift;
  const double core_ghz = asked_mhz != 0 ? asked_mhz / 1000.0 : options_.core_ghz;
  if (core_ghz <= 0 && (request->flags & kRpcFlagWimpy))
    return bad("rpc: this memory node emulates no wimpy core (--rpc-core-ghz)");

  RpcMemory memory(*table_, request->tenant, span_base_, span_size_, options_.max_steps);
  const Clock::time_point start = Clock::now();
  RpcOutcome outcome = handler->run(memory, request->start, request->state, &reply.output);
  const Clock::time_point end = Clock::now();
  const auto exec = end - start;
  Clock::time_point finish = end;
  if (request->flags & kRpcFlagWimpy) {
    finish = start + std::chrono::duration_cast<Clock::duration>(exec * (host_ghz_ / core_ghz));
    if (finish < end) finish = end;  // a "wimpy" core faster than the host: no slowdown
    SpinUntil(finish);
    ++counters_.wimpy_calls;
    counters_.spin_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(finish - end).count();
  }
  ++counters_.calls;
  counters_.steps += memory.steps();
  counters_.exec_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(exec).count();
  switch (outcome.status) {
    case TraversalStatus::kDone: break;
    case TraversalStatus::kNotLocal: ++counters_.not_local; break;
    case TraversalStatus::kContinue: ++counters_.continues; break;
    default: ++counters_.faults; break;
  }
  reply.status = outcome.status;
  reply.next_ptr = outcome.next_ptr;
  reply.fault_addr = outcome.fault_addr;
  reply.steps = memory.steps();
  const int64_t total_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(finish - start).count();
  reply.exec_ns = static_cast<uint32_t>(std::min<int64_t>(total_ns, UINT32_MAX));
  reply.state = std::move(request->state);
  return EncodeRpcReply(reply);
}

}  // namespace pulse::rpc
