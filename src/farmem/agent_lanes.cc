#include "farmem/agent_lanes.h"

#include <fmt/format.h>

namespace pulse::farmem {

struct AgentLanes::Lane {
  std::unique_ptr<net::Worker> worker;
  net::EndpointId ep = net::kInvalidEndpoint;
  // The caller's thread only (handlers run inside its RunUntil).
  uint64_t waiting_id = 0;
  std::optional<AgentReply> reply;
  Status failed;  // the connection's failure (then the lane stays failed)
};

Result<std::unique_ptr<AgentLanes>> AgentLanes::Open(uint32_t count, const net::WorkerOptions& worker,
                                                     const std::string& host, uint16_t port,
                                                     std::chrono::milliseconds connect_timeout) {
  std::unique_ptr<AgentLanes> l(new AgentLanes());
  l->address_ = fmt::format("{}:{}", host, port);
  for (uint32_t i = 0; i < count; ++i) {
    auto lane = std::make_unique<Lane>();
    Lane* raw = lane.get();
    net::WorkerOptions wo = worker;
    wo.name = fmt::format("{}-lane{}", worker.name, i);
    PULSE_ASSIGN_OR_RETURN(lane->worker, net::Worker::Create(wo));
    auto ep = lane->worker->Connect(host, port, connect_timeout);
    if (!ep.ok())
      return Status::FromCode(ep.status().code(), fmt::format("agent backend: lane {} cannot reach pulse agent at {}: {}",
                                                              i, l->address_, ep.status().message()));
    lane->ep = *ep;
    lane->worker->SetHandler(kAmAgentReply, [raw](net::EndpointId, std::span<const uint8_t> p) {
      Result<AgentReply> r = DecodeAgentReply(p);
      if (r.ok() && raw->waiting_id != 0 && r->request_id == raw->waiting_id) raw->reply = std::move(*r);
    });
    lane->worker->SetDisconnectHandler([raw](net::EndpointId, const Status& why) {
      if (raw->failed.ok()) raw->failed = Status::Unavailable(fmt::format("the agent is unreachable ({})", why.message()));
    });
    l->free_.push_back(raw);
    l->lanes_.push_back(std::move(lane));
  }
  return l;
}

AgentLanes::~AgentLanes() = default;

AgentLanes::Lane* AgentLanes::Take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!freed_.wait_for(lock, timeout, [this] { return !free_.empty(); })) return nullptr;
  Lane* lane = free_.back();
  free_.pop_back();
  return lane;
}

void AgentLanes::Give(Lane* lane) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(lane);
  }
  freed_.notify_one();
}

Result<AgentReply> AgentLanes::Call(AgentRequest request, std::chrono::milliseconds timeout, const std::string& what) {
  Lane* lane = Take(timeout);
  if (lane == nullptr)
    return Status::Timeout(fmt::format("pulse agent at {}: {}: no free connection in {} ms", address_, what,
                                       timeout.count()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    request.request_id = next_id_++;
  }
  struct Release {
    AgentLanes* lanes;
    Lane* lane;
    ~Release() {
      lane->waiting_id = 0;
      lane->reply.reset();
      lanes->Give(lane);
    }
  } release{this, lane};
  auto unavailable = [&](const Status& why) {
    return Status::Unavailable(fmt::format("pulse agent at {}: {} failed: {}", address_, what, why.message()));
  };
  if (!lane->failed.ok()) return unavailable(lane->failed);
  lane->waiting_id = request.request_id;
  lane->reply.reset();
  if (Status s = lane->worker->Send(lane->ep, kAmAgentRequest, EncodeAgentRequest(request)); !s.ok())
    return unavailable(s);
  Status waited =
      lane->worker->RunUntil([lane] { return lane->reply.has_value() || !lane->failed.ok(); }, timeout);
  if (lane->reply) return std::move(*lane->reply);
  if (!lane->failed.ok()) return unavailable(lane->failed);
  if (waited.code() == Status::Code::kTimeout || waited.ok())
    return Status::Timeout(fmt::format("pulse agent at {}: {}: no answer in {} ms", address_, what, timeout.count()));
  return unavailable(waited);
}

}  // namespace pulse::farmem
