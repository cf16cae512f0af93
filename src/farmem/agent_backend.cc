// The host side of the agent protocol.  Callers' requests go through a
// queue to the network thread, which tracks each under its request id
// (RequestTracker, sent once: the endpoint is reliable, and its failure is
// reported by the disconnect handler) and hands the answer back through the
// request's slot.
#include "pulse/farmem/agent_backend.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/request_tracker.h"
#include "farmem/agent_lanes.h"
#include "farmem/agent_wire.h"

namespace pulse::farmem {
namespace {

// A request about region `region` (pages [first, first + count) for reads
// and writes).
AgentRequest RegionRequest(AgentOp op, uint64_t region, uint64_t first = 0, uint32_t count = 0,
                           uint32_t page_bytes = 0) {
  AgentRequest q;
  q.op = op;
  q.region = region;
  q.first = first;
  q.count = count;
  q.page_bytes = page_bytes;
  return q;
}

const char* OpName(AgentOp op) {
  switch (op) {
    case AgentOp::kCreateRegion: return "create";
    case AgentOp::kReadPages: return "read";
    case AgentOp::kWritePages: return "write-back";
    case AgentOp::kMarkReadOnly: return "mark read-only";
    case AgentOp::kDestroyRegion: return "destroy";
    case AgentOp::kStats: return "stats";
    default: return "request";
  }
}

// Where a caller waits for its answer.
struct Slot {
  bool done = false;
  Result<AgentReply> result = Status::Internal("unanswered");
};

struct Queued {
  AgentRequest request;
  std::chrono::milliseconds timeout;
  std::shared_ptr<Slot> slot;
};

// What the tracker keeps of a request: enough to name it in errors.
struct Sent {
  AgentOp op;
  uint64_t region;
  uint64_t first;
  uint32_t count;
  std::chrono::milliseconds timeout;
};

}  // namespace

struct AgentBackend::Impl {
  AgentBackendOptions options;
  std::unique_ptr<net::Worker> worker;
  net::EndpointId ep = net::kInvalidEndpoint;
  std::thread thread;

  std::mutex mu;
  std::condition_variable answered;
  std::deque<Queued> queue;  // guarded by mu
  bool stop = false;         // guarded by mu
  Status gone;               // guarded by mu: why the agent is unreachable (OK while it is)
  uint64_t next_id = 1;      // guarded by mu

  // Network thread only.
  std::unique_ptr<RequestTracker<Sent, AgentReply>> tracker;
  // Page reads and write-backs (null: lanes = 0).
  std::unique_ptr<AgentLanes> lanes;

  // A page request: on a lane when there are lanes.  A read's data goes
  // straight to `read_into` when it fits (AgentLanes::Call): `delivered`.
  Result<AgentReply> CallPages(AgentRequest request, std::span<uint8_t> read_into = {}, bool* delivered = nullptr) {
    if (lanes == nullptr) return Call(std::move(request), options.request_timeout);
    const Sent s{request.op, request.region, request.first, request.count, options.request_timeout};
    PULSE_ASSIGN_OR_RETURN(AgentLanes::Answer a,
                           lanes->Call(std::move(request), options.request_timeout, Describe(s), read_into));
    if (!a.reply.status.ok()) return a.reply.status;
    if (delivered != nullptr) *delivered = a.delivered;
    return std::move(a.reply);
  }

  std::string Describe(const Sent& s) const {
    if (s.op == AgentOp::kReadPages || s.op == AgentOp::kWritePages)
      return fmt::format("{} of region {} pages [{}, {})", OpName(s.op), s.region, s.first, s.first + s.count);
    if (s.op == AgentOp::kCreateRegion || s.op == AgentOp::kStats) return OpName(s.op);
    return fmt::format("{} of region {}", OpName(s.op), s.region);
  }

  void FailAll(const Status& why) {
    std::vector<uint64_t> ids;
    tracker->ForEach([&](uint64_t id, Sent&) { ids.push_back(id); });
    for (uint64_t id : ids) {
      const Sent& s = *tracker->Find(id);
      tracker->Complete(id, Status::Unavailable(fmt::format("pulse agent at {}: {} failed: {}", options.agent_address,
                                                            Describe(s), why.message())));
    }
  }

  void OnReply(std::span<const uint8_t> payload) {
    Result<AgentReply> r = DecodeAgentReply(payload);
    if (!r.ok()) return;
    if (tracker->OnAnswer(r->request_id) == nullptr) return;
    tracker->Complete(r->request_id, std::move(*r));
  }

  void SendQueued() {
    std::deque<Queued> todo;
    Status dead;
    {
      std::lock_guard<std::mutex> lock(mu);
      todo.swap(queue);
      dead = gone;
    }
    for (Queued& q : todo) {
      const uint64_t id = q.request.request_id;
      Sent s{q.request.op, q.request.region, q.request.first, q.request.count, q.timeout};
      std::shared_ptr<Slot> slot = q.slot;
      auto done = [this, slot](Result<AgentReply> r) {
        std::lock_guard<std::mutex> lock(mu);
        slot->result = std::move(r);
        slot->done = true;
        answered.notify_all();
      };
      if (!dead.ok()) {
        tracker->Post(done, Status::Unavailable(fmt::format("pulse agent at {}: {} failed: {}", options.agent_address,
                                                            Describe(s), dead.message())));
        continue;
      }
      tracker->Track(id, s, RetryPolicy::Once(q.timeout), done);
      if (Status st = worker->Send(ep, kAmAgentRequest, EncodeAgentRequest(q.request)); !st.ok())
        tracker->Complete(id, Status::Unavailable(fmt::format("pulse agent at {}: {} failed: {}", options.agent_address,
                                                              Describe(s), st.message())));
    }
  }

  bool HasQueue() {
    std::lock_guard<std::mutex> lock(mu);
    return stop || !queue.empty();
  }

  void Loop() {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop) break;
      }
      const auto now = TrackerClock::Steady().Now();
      const auto next = tracker->NextDeadline();
      auto wait = std::chrono::milliseconds(1000);
      if (next != TrackerClock::time_point::max())
        wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(std::max(next - now, TrackerClock::duration(0))));
      (void)worker->RunUntil([this] { return tracker->has_ready() || HasQueue(); }, wait);
      SendQueued();
      tracker->Service();
      tracker->RunReady();
    }
    FailAll(Status::Unavailable("the backend was closed"));
    SendQueued();  // late callers get Unavailable too
    tracker->RunReady();
  }

  // Queues a request and waits for its answer.
  Result<AgentReply> Call(AgentRequest request, std::chrono::milliseconds timeout) {
    auto slot = std::make_shared<Slot>();
    {
      std::unique_lock<std::mutex> lock(mu);
      request.request_id = next_id++;
      queue.push_back({std::move(request), timeout, slot});
    }
    worker->Wake();
    std::unique_lock<std::mutex> lock(mu);
    // The tracker ends the request at `timeout`; the extra second only
    // guards against a network thread that stopped.
    if (!answered.wait_for(lock, timeout + std::chrono::seconds(1), [&] { return slot->done; }))
      return Status::Timeout(fmt::format("pulse agent at {}: no answer in {} ms", options.agent_address,
                                         timeout.count()));
    Result<AgentReply> r = std::move(slot->result);
    if (!r.ok()) return r.status();
    if (!r->status.ok()) return r->status;
    return r;
  }
};

AgentBackend::AgentBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AgentBackend::~AgentBackend() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->worker->Wake();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->tracker.reset();
  impl_->worker.reset();
}

Result<std::unique_ptr<AgentBackend>> AgentBackend::Connect(const AgentBackendOptions& options) {
  const size_t colon = options.agent_address.rfind(':');
  if (colon == std::string::npos || colon + 1 == options.agent_address.size())
    return Status::InvalidArgument(fmt::format("agent backend: agent_address '{}' is not host:port", options.agent_address));
  uint32_t port = 0;
  for (char c : options.agent_address.substr(colon + 1)) {
    if (c < '0' || c > '9' || (port = port * 10 + (c - '0')) > 65535)
      return Status::InvalidArgument(fmt::format("agent backend: agent_address '{}' has a bad port", options.agent_address));
  }
  auto impl = std::make_unique<Impl>();
  Impl* raw = impl.get();
  impl->options = options;
  net::WorkerOptions wo = options.worker;
  if (wo.name == "pulse") wo.name = "agent-backend";
  PULSE_ASSIGN_OR_RETURN(impl->worker, net::Worker::Create(wo));
  auto ep = impl->worker->Connect(options.agent_address.substr(0, colon), static_cast<uint16_t>(port),
                                  options.connect_timeout);
  if (!ep.ok())
    return Status::FromCode(ep.status().code(), fmt::format("agent backend: cannot reach pulse agent at {}: {}",
                                                            options.agent_address, ep.status().message()));
  impl->ep = *ep;
  impl->tracker = std::make_unique<RequestTracker<Sent, AgentReply>>(
      &TrackerClock::Steady(), [](uint64_t, Sent&, ResendReason) {},
      [raw](uint64_t, const Sent& s, uint32_t) {
        return Status::Timeout(fmt::format("pulse agent at {}: {}: no answer in {} ms", raw->options.agent_address,
                                           raw->Describe(s), s.timeout.count()));
      });
  impl->worker->SetHandler(kAmAgentReply, [raw](net::EndpointId, std::span<const uint8_t> p) { raw->OnReply(p); });
  impl->worker->SetDisconnectHandler([raw](net::EndpointId, const Status& why) {
    {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->gone = Status::Unavailable(fmt::format("the agent is unreachable ({})", why.message()));
    }
    raw->FailAll(why);
  });
  if (options.lanes > 0) {
    auto lanes = AgentLanes::Open(options.lanes, wo, options.agent_address.substr(0, colon),
                                  static_cast<uint16_t>(port), options.connect_timeout);
    if (!lanes.ok()) return lanes.status();
    impl->lanes = std::move(*lanes);
  }
  impl->thread = std::thread([raw] { raw->Loop(); });
  return std::unique_ptr<AgentBackend>(new AgentBackend(std::move(impl)));
}

Result<uint64_t> AgentBackend::CreateRegion(const std::string& name, uint64_t bytes, const std::string& file,
                                            bool read_only) {
  AgentRequest q;
  q.op = AgentOp::kCreateRegion;
  q.name = name;
  q.bytes = bytes;
  q.file = file;
  q.read_only = read_only;
  PULSE_ASSIGN_OR_RETURN(AgentReply a, impl_->Call(std::move(q), impl_->options.create_timeout));
  return a.value;
}

Status AgentBackend::ReadPages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, void* dst,
                               PageClass cls) {
  AgentRequest q = RegionRequest(AgentOp::kReadPages, id, first, count, page_bytes);
  q.cls = cls;
  const uint64_t want = uint64_t{count} * page_bytes;
  bool delivered = false;
  PULSE_ASSIGN_OR_RETURN(AgentReply a,
                         impl_->CallPages(std::move(q), {static_cast<uint8_t*>(dst), want}, &delivered));
  if (delivered) return Status::Ok();
  if (a.data.size() != want)
    return Status::Internal(fmt::format("pulse agent at {}: read of region {} pages [{}, {}) answered {} bytes, not {}",
                                        impl_->options.agent_address, id, first, first + count, a.data.size(), want));
  std::memcpy(dst, a.data.data(), want);
  return Status::Ok();
}

Status AgentBackend::WritePages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, const void* src) {
  AgentRequest q = RegionRequest(AgentOp::kWritePages, id, first, count, page_bytes);
  q.cls = PageClass::kWriteBack;
  const auto* p = static_cast<const uint8_t*>(src);
  q.data.assign(p, p + uint64_t{count} * page_bytes);
  return impl_->CallPages(std::move(q)).status();
}

Status AgentBackend::MarkReadOnly(uint64_t id) {
  return impl_->Call(RegionRequest(AgentOp::kMarkReadOnly, id), impl_->options.request_timeout).status();
}

Status AgentBackend::DestroyRegion(uint64_t id) {
  return impl_->Call(RegionRequest(AgentOp::kDestroyRegion, id), impl_->options.request_timeout).status();
}

Result<std::string> AgentBackend::AgentStats() {
  PULSE_ASSIGN_OR_RETURN(AgentReply a, impl_->Call(RegionRequest(AgentOp::kStats, 0), impl_->options.request_timeout));
  return std::string(a.data.begin(), a.data.end());
}

AgentHopStats AgentBackend::hop_stats() const {
  return impl_->lanes != nullptr ? impl_->lanes->hop_stats() : AgentHopStats{};
}

}  // namespace pulse::farmem
