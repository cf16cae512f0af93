#include "farmem/agent_lanes.h"

#include <cstring>

#include <fmt/format.h>

namespace pulse::farmem {

struct AgentLanes::Lane {
  std::unique_ptr<net::Worker> worker;
  net::EndpointId ep = net::kInvalidEndpoint;
  // The caller's thread only (handlers run inside its RunUntil).
  uint64_t waiting_id = 0;
  std::span<uint8_t> read_into;  // where the awaited reply's data goes (empty: into reply)
  std::optional<AgentReply> reply;
  bool delivered = false;        // reply's data went to read_into
  uint64_t answered_ns = 0;      // when the handler took the reply (AgentClockNanos)
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
      Result<AgentReplyView> v = DecodeAgentReplyView(p);
      if (!v.ok() || raw->waiting_id == 0 || v->request_id != raw->waiting_id) return;
      raw->answered_ns = AgentClockNanos();
      raw->delivered = v->status.ok() && !raw->read_into.empty() && v->data.size() == raw->read_into.size();
      if (raw->delivered) std::memcpy(raw->read_into.data(), v->data.data(), v->data.size());
      raw->reply = ReplyOf(std::move(*v), /*with_data=*/!raw->delivered);
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

AgentHopStats AgentLanes::hop_stats() const {
  AgentHopStats h;
  h.reads_timed = reads_timed_.load();
  h.send_ns = send_ns_.load();
  h.to_agent_ns = to_agent_ns_.load();
  h.agent_ns = agent_ns_.load();
  h.from_agent_ns = from_agent_ns_.load();
  h.deliver_ns = deliver_ns_.load();
  h.reads_slept = reads_slept_.load();
  h.from_agent_slept_ns = from_agent_slept_ns_.load();
  return h;
}

Result<AgentLanes::Answer> AgentLanes::Call(AgentRequest request, std::chrono::milliseconds timeout,
                                            const std::string& what, std::span<uint8_t> read_into) {
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
      lane->read_into = {};
      lane->reply.reset();
      lanes->Give(lane);
    }
  } release{this, lane};
  auto unavailable = [&](const Status& why) {
    return Status::Unavailable(fmt::format("pulse agent at {}: {} failed: {}", address_, what, why.message()));
  };
  if (!lane->failed.ok()) return unavailable(lane->failed);
  lane->waiting_id = request.request_id;
  lane->read_into = read_into;
  lane->reply.reset();
  lane->delivered = false;
  const bool timed = request.op == AgentOp::kReadPages;
  const uint64_t sleeps_before = lane->worker->counters().sleeps;
  const uint64_t sent_ns = AgentClockNanos();
  if (Status s = lane->worker->Send(lane->ep, kAmAgentRequest, EncodeAgentRequest(request)); !s.ok())
    return unavailable(s);
  const uint64_t send_done_ns = AgentClockNanos();
  Status waited =
      lane->worker->RunUntil([lane] { return lane->reply.has_value() || !lane->failed.ok(); }, timeout);
  if (lane->reply) {
    const AgentStamps& st = lane->reply->stamps;
    if (timed && st.received_ns != 0 && st.replied_ns >= st.received_ns && lane->answered_ns >= st.replied_ns) {
      // One clock for the machine's processes (AgentStamps): the stages
      // follow each other, so each difference is >= 0 (the first is
      // clamped: two cores' reads of the clock).
      const uint64_t to_agent = st.received_ns > sent_ns ? st.received_ns - sent_ns : 0;
      const uint64_t from_agent = lane->answered_ns - st.replied_ns;
      reads_timed_.fetch_add(1, std::memory_order_relaxed);
      send_ns_.fetch_add(send_done_ns - sent_ns, std::memory_order_relaxed);
      to_agent_ns_.fetch_add(to_agent, std::memory_order_relaxed);
      agent_ns_.fetch_add(st.replied_ns - st.received_ns, std::memory_order_relaxed);
      from_agent_ns_.fetch_add(from_agent, std::memory_order_relaxed);
      deliver_ns_.fetch_add(AgentClockNanos() - lane->answered_ns, std::memory_order_relaxed);
      if (lane->worker->counters().sleeps != sleeps_before) {
        reads_slept_.fetch_add(1, std::memory_order_relaxed);
        from_agent_slept_ns_.fetch_add(from_agent, std::memory_order_relaxed);
      }
    }
    return Answer{std::move(*lane->reply), lane->delivered};
  }
  if (!lane->failed.ok()) return unavailable(lane->failed);
  if (waited.code() == Status::Code::kTimeout || waited.ok())
    return Status::Timeout(fmt::format("pulse agent at {}: {}: no answer in {} ms", address_, what, timeout.count()));
  return unavailable(waited);
}

}  // namespace pulse::farmem
