#include "cluster/control_session.h"

#include <fmt/format.h>

namespace pulse::cluster {

using Clock = std::chrono::steady_clock;

std::string ConnectHost(const std::string& host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]" ? std::string("127.0.0.1") : host;
}

Result<std::unique_ptr<ControlSession>> ControlSession::Create(const std::string& transports) {
  net::WorkerOptions wo;
  wo.name = "pulse-control";
  wo.transports = transports;
  auto worker = net::Worker::Create(wo);
  if (!worker.ok()) return worker.status();
  std::unique_ptr<ControlSession> s(new ControlSession());
  s->worker_ = std::move(worker).value();
  s->control_ = std::make_unique<ControlClient>(s->worker_.get());
  return s;
}

ControlSession::~ControlSession() {
  // Best effort: the session ends either way.
  for (const auto& [address, ep] : endpoints_) IgnoreError(worker_->Close(ep, std::chrono::milliseconds(100)));
  control_.reset();
  worker_.reset();
}

void ControlSession::Disconnect(const std::string& address) {
  auto it = endpoints_.find(address);
  if (it == endpoints_.end()) return;
  IgnoreError(worker_->Close(it->second, std::chrono::milliseconds(100)));  // forgotten either way
  endpoints_.erase(it);
}

Result<nlohmann::json> ControlSession::Call(const std::string& address, const std::string& op,
                                            net::Duration timeout, nlohmann::json fields) {
  const auto deadline = Clock::now() + timeout;
  auto it = endpoints_.find(address);
  if (it != endpoints_.end() && !worker_->IsConnected(it->second)) {
    Disconnect(address);
    it = endpoints_.end();
  }
  if (it == endpoints_.end()) {
    auto hp = ParseAddress(address);
    if (!hp.ok()) return hp.status();
    auto ep = worker_->Connect(ConnectHost(hp->first), hp->second, timeout);
    if (!ep.ok()) return ep.status();
    it = endpoints_.emplace(address, *ep).first;
  }
  fields["op"] = op;
  const auto left = std::max<net::Duration>(deadline - Clock::now(), std::chrono::milliseconds(1));
  auto reply = control_->Call(it->second, std::move(fields), left);
  if (!reply.ok() && reply.status().code() != Status::Code::kInvalidArgument) Disconnect(address);
  return reply;
}

}  // namespace pulse::cluster
