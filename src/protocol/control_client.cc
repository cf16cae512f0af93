#include "protocol/control_client.h"

#include <algorithm>

#include <fmt/format.h>

#include "protocol/control_reply.h"
#include "pulse/cluster.h"

namespace pulse {

ControlClient::ControlClient(net::Worker* worker) : worker_(worker) {
  worker_->SetHandler(kAmControlReply, [this](net::EndpointId, std::span<const uint8_t> payload) {
    auto reply = nlohmann::json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
    if (reply.is_discarded() || !reply.is_object() || !reply.contains("seq") || !reply["seq"].is_number_unsigned())
      return;  // not an answer we can match: drop it
    const uint64_t seq = reply["seq"].get<uint64_t>();  // before the move below
    if (seq != awaited_) return;  // a late or duplicated answer to a finished call
    replies_[seq] = std::move(reply);
  });
}

bool ControlClient::Resendable(const std::string& op) {
  return op == "hello" || op == "stats" || op == "alloc" || op == "free" || op == "lock" ||
         op == "lock_renew" || op == "unlock";
}

Result<nlohmann::json> ControlClient::Call(net::EndpointId ep, nlohmann::json request, net::Duration timeout) {
  const uint64_t seq = next_seq_++;
  request["seq"] = seq;
  const std::string op = request.value("op", "?");
  const std::string text = request.dump();
  const auto bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  awaited_ = seq;
  Status s = worker_->Send(ep, kAmControl, bytes);
  if (!s.ok()) {
    awaited_ = 0;
    return s;
  }
  const auto start = net::Clock::now();
  const auto deadline = start + timeout;
  const bool resend = Resendable(op);
  net::Duration wait = resend ? timeout / 8 : timeout;  // then 1/4, 1/2: re-sent at 1/8, 3/8, 7/8
  for (auto at = start + wait;; wait *= 2, at += wait) {
    const auto until = std::min(at, deadline);
    (void)worker_->RunUntil([&] { return replies_.count(seq) > 0 || !worker_->IsConnected(ep); },
                            std::max<net::Duration>(until - net::Clock::now(), net::Duration::zero()));
    if (replies_.count(seq) > 0 || !worker_->IsConnected(ep) || until >= deadline) break;
    if (!worker_->Send(ep, kAmControl, bytes).ok()) break;  // the connection failed
    ++retransmissions_;
  }
  awaited_ = 0;
  auto it = replies_.find(seq);
  if (it == replies_.end()) {
    if (!worker_->IsConnected(ep)) return Status::Unavailable(fmt::format("control {}: the peer disconnected", op));
    return Status::Timeout(fmt::format("control {}: no answer within {} ms", op,
                                       std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
  }
  nlohmann::json reply = std::move(it->second);
  replies_.erase(it);
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
