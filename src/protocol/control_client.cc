#include "protocol/control_client.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "protocol/control_reply.h"
#include "pulse/cluster.h"

namespace pulse {

namespace {
std::span<const uint8_t> Bytes(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}
}  // namespace

ControlClient::ControlClient(net::Worker* worker)
    : worker_(worker),
      tracker_(
          &TrackerClock::Steady(), [this](uint64_t seq, Outgoing& call, ResendReason) { Resend(seq, call); },
          [](uint64_t, const Outgoing& call, uint32_t) {
            return Status::Timeout(fmt::format(
                "control {}: no answer within {} ms", call.op,
                std::chrono::duration_cast<std::chrono::milliseconds>(call.timeout).count()));
          }) {
  worker_->SetHandler(kAmControlReply, [this](net::EndpointId, std::span<const uint8_t> payload) {
    auto reply = nlohmann::json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
    if (reply.is_discarded() || !reply.is_object() || !reply.contains("seq") || !reply["seq"].is_number_unsigned())
      return;  // not an answer we can match: drop it
    const uint64_t seq = reply["seq"].get<uint64_t>();  // before the move below
    if (tracker_.OnAnswer(seq) == nullptr) return;  // a late or duplicated answer to a finished call
    tracker_.Complete(seq, std::move(reply));
  });
}

bool ControlClient::Resendable(const std::string& op) {
  return op == "hello" || op == "stats" || op == "alloc" || op == "free" || op == "lock" ||
         op == "lock_renew" || op == "unlock" || op == "key" || op == "root_get" || op == "persist" ||
         op == "end_session";
}

void ControlClient::Resend(uint64_t seq, Outgoing& call) {
  if (worker_->Send(call.ep, kAmControl, Bytes(call.text)).ok()) {
    ++retransmissions_;
    return;
  }
  // The connection failed: no further re-sends.
  tracker_.Complete(seq, worker_->IsConnected(call.ep)
                             ? Status::Timeout(fmt::format("control {}: re-sending failed", call.op))
                             : Status::Unavailable(fmt::format("control {}: the peer disconnected", call.op)));
}

Result<nlohmann::json> ControlClient::Call(net::EndpointId ep, nlohmann::json request, net::Duration timeout) {
  const uint64_t seq = next_seq_++;
  request["seq"] = seq;
  Outgoing call{ep, request.value("op", "?"), request.dump(), timeout};
  const std::string op = call.op;
  PULSE_RETURN_IF_ERROR(worker_->Send(ep, kAmControl, Bytes(call.text)));
  // A lost request or answer: re-sent at 1/8, 3/8, 7/8 of the timeout.
  const RetryPolicy policy = Resendable(op) ? RetryPolicy::Spread(timeout) : RetryPolicy::Once(timeout);
  std::optional<Result<nlohmann::json>> out;
  tracker_.Track(seq, std::move(call), policy, [&out](Result<nlohmann::json> r) { out.emplace(std::move(r)); });
  for (;;) {
    tracker_.RunReady();
    if (out) break;
    if (!worker_->IsConnected(ep)) {
      tracker_.Complete(seq, Status::Unavailable(fmt::format("control {}: the peer disconnected", op)));
      continue;
    }
    const auto wait = tracker_.NextDeadline() - net::Clock::now();
    (void)worker_->RunUntil([&] { return tracker_.has_ready() || !worker_->IsConnected(ep); },
                            std::max<net::Duration>(std::chrono::duration_cast<net::Duration>(wait), net::Duration::zero()));
    tracker_.Service();
  }
  if (!out->ok()) return out->status();
  nlohmann::json reply = std::move(out->value());
  PULSE_RETURN_IF_ERROR(ControlReplyStatus(reply, "control " + op));
  return reply;
}

Result<std::pair<std::string, uint16_t>> ParseAddress(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return Status::InvalidArgument(fmt::format("address '{}' is not host:port", text));
  const std::string port_text = text.substr(colon + 1);
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535)
    return Status::InvalidArgument(fmt::format("address '{}': port '{}' is not 1..65535", text, port_text));
  return std::make_pair(text.substr(0, colon), static_cast<uint16_t>(port));
}

}  // namespace pulse
