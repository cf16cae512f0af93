#include "farmem/agent_memory_client.h"

#include <optional>

#include <fmt/format.h>

#include "client/client_internal.h"
#include "common/request_tracker.h"
#include "farmem/agent_wire.h"
#include "pulse/cluster.h"

namespace pulse::farmem {
namespace {

struct PendingOp {
  AgentRequest request;  // kept for the timeout's message
  uint32_t node = 0;
};

// What a request completes with: the reply's integer and bytes.
struct Answer {
  uint64_t value = 0;
  std::vector<uint8_t> data;
};

const char* OpVerb(AgentOp op) {
  switch (op) {
    case AgentOp::kMemRead: return "read";
    case AgentOp::kMemWrite: return "write";
    case AgentOp::kMemPreload: return "preload";
    default: return "request";
  }
}

}  // namespace

struct MemoryAgentClient::Impl final : EventSource {
  Impl(Client* c, std::chrono::milliseconds timeout)
      : client(c),
        request_timeout(timeout),
        tracker(
            &TrackerClock::Steady(), [](uint64_t, PendingOp&, ResendReason) {},
            [this](uint64_t, const PendingOp& p, uint32_t) {
              ++counters.timeouts;
              return Status::Timeout(fmt::format("memory agent: {} of {} bytes at {:#x} on memory node {}: no answer in {} ms",
                                                 OpVerb(p.request.op), p.request.bytes, p.request.addr, p.node,
                                                 request_timeout.count()));
            }) {}

  Client* client;
  std::chrono::milliseconds request_timeout;
  uint64_t next_counter = 1;
  RequestTracker<PendingOp, Answer> tracker;
  MemoryAgentCounters counters;

  net::Worker& worker() { return ClientInternal::worker(*client); }

  void Start(AgentRequest request, std::function<void(Result<Answer>)> done) {
    const std::optional<uint32_t> node = client->NodeOf(request.addr);
    if (!node)
      return tracker.Post(std::move(done), Status::InvalidArgument(fmt::format(
                                               "memory agent: far address {:#x} is on no memory node", request.addr)));
    const net::EndpointId ep = ClientInternal::memnode_endpoint(*client, *node);
    if (ep == net::kInvalidEndpoint || !worker().IsConnected(ep))
      return tracker.Post(std::move(done), Status::Unavailable(fmt::format(
                                               "memory agent: memory node {} (owner of {:#x}) is unavailable", *node,
                                               request.addr)));
    request.request_id = MakeRequestId(client->cpu_node(), next_counter++);
    request.tenant = client->tenant();
    const uint64_t id = request.request_id;
    std::vector<uint8_t> wire = EncodeAgentRequest(request);
    if (request.op == AgentOp::kMemWrite) request.data.clear();  // not needed for the message
    tracker.Track(id, PendingOp{std::move(request), *node}, RetryPolicy::Once(request_timeout), std::move(done));
    ++counters.requests;
    if (Status s = worker().Send(ep, kAmMemAgentRequest, std::move(wire)); !s.ok())
      tracker.Complete(id, Status::Unavailable(fmt::format("memory agent: memory node {}: {}", *node, s.message())));
  }

  void OnReply(std::span<const uint8_t> payload) {
    Result<AgentReply> r = DecodeAgentReply(payload);
    if (!r.ok()) {
      ++counters.bad_replies;
      return;
    }
    if (tracker.OnAnswer(r->request_id) == nullptr) {
      ++counters.stale_replies;
      return;
    }
    if (!r->status.ok()) return tracker.Complete(r->request_id, std::move(r->status));
    tracker.Complete(r->request_id, Answer{r->value, std::move(r->data)});
  }

  template <typename T>
  Result<T> Wait(std::optional<Result<T>>& out) {
    EventLoop& loop = ClientInternal::loop(*client);
    const auto budget = request_timeout + std::chrono::seconds(1);
    while (!out) {
      Status s = loop.DriveUntil([&] { return out.has_value(); }, budget);
      if (!out && !s.ok() && tracker.empty() && !tracker.has_ready()) return s;
    }
    return std::move(*out);
  }

  void Service() override { tracker.Service(); }
  time_point NextDeadline() const override { return tracker.NextDeadline(); }
  bool RunReady() override { return tracker.RunReady() > 0; }
  bool has_ready() const override { return tracker.has_ready(); }
};

MemoryAgentClient::MemoryAgentClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MemoryAgentClient::~MemoryAgentClient() {
  impl_->worker().SetHandler(kAmMemAgentReply, {});
  ClientInternal::loop(*impl_->client).Remove(impl_.get());
}

Result<std::unique_ptr<MemoryAgentClient>> MemoryAgentClient::Create(Client* client,
                                                                     std::chrono::milliseconds request_timeout) {
  if (client == nullptr) return Status::InvalidArgument("MemoryAgentClient: no client");
  if (request_timeout.count() <= 0) return Status::InvalidArgument("MemoryAgentClient: request_timeout must be positive");
  auto impl = std::make_unique<Impl>(client, request_timeout);
  Impl* raw = impl.get();
  raw->worker().SetHandler(kAmMemAgentReply, [raw](net::EndpointId, std::span<const uint8_t> p) { raw->OnReply(p); });
  ClientInternal::loop(*client).Add(raw);
  return std::unique_ptr<MemoryAgentClient>(new MemoryAgentClient(std::move(impl)));
}

void MemoryAgentClient::ReadAsync(uint64_t addr, uint64_t bytes, PageClass cls, ReadDone done) {
  AgentRequest q;
  q.op = AgentOp::kMemRead;
  q.addr = addr;
  q.bytes = bytes;
  q.cls = cls;
  impl_->Start(std::move(q), [done = std::move(done)](Result<Answer> a) {
    if (!a.ok()) return done(a.status());
    done(std::move(a->data));
  });
}

void MemoryAgentClient::WriteAsync(uint64_t addr, std::vector<uint8_t> data, PageClass cls, Done done) {
  AgentRequest q;
  q.op = AgentOp::kMemWrite;
  q.addr = addr;
  q.bytes = data.size();
  q.cls = cls;
  q.data = std::move(data);
  impl_->Start(std::move(q), [done = std::move(done)](Result<Answer> a) {
    if (!a.ok()) return done(a.status());
    done(a->value);
  });
}

void MemoryAgentClient::PreloadAsync(uint64_t addr, uint64_t bytes, const std::string& file, uint64_t file_offset,
                                     Done done) {
  AgentRequest q;
  q.op = AgentOp::kMemPreload;
  q.addr = addr;
  q.bytes = bytes;
  q.file = file;
  q.first = file_offset;
  impl_->Start(std::move(q), [done = std::move(done)](Result<Answer> a) {
    if (!a.ok()) return done(a.status());
    done(a->value);
  });
}

Result<std::vector<uint8_t>> MemoryAgentClient::Read(uint64_t addr, uint64_t bytes, PageClass cls) {
  std::optional<Result<std::vector<uint8_t>>> out;
  ReadAsync(addr, bytes, cls, [&out](Result<std::vector<uint8_t>> r) { out.emplace(std::move(r)); });
  return impl_->Wait(out);
}

Result<uint64_t> MemoryAgentClient::Write(uint64_t addr, std::vector<uint8_t> data, PageClass cls) {
  std::optional<Result<uint64_t>> out;
  WriteAsync(addr, std::move(data), cls, [&out](Result<uint64_t> r) { out.emplace(std::move(r)); });
  return impl_->Wait(out);
}

Result<uint64_t> MemoryAgentClient::Preload(uint64_t addr, uint64_t bytes, const std::string& file,
                                            uint64_t file_offset) {
  std::optional<Result<uint64_t>> out;
  PreloadAsync(addr, bytes, file, file_offset, [&out](Result<uint64_t> r) { out.emplace(std::move(r)); });
  return impl_->Wait(out);
}

size_t MemoryAgentClient::pending() const { return impl_->tracker.size(); }
const MemoryAgentCounters& MemoryAgentClient::counters() const { return impl_->counters; }

}  // namespace pulse::farmem
