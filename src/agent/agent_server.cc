#include "agent/agent_server.h"

#include <sched.h>
#include <sys/resource.h>

#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent/client_forwarder.h"
#include "node/node_control.h"
#include "node/node_tenant.h"
#include "pulse/client.h"
#include "pulse/cluster.h"

namespace pulse::agent {

uint64_t ProcessMaxRssKib() {
  struct rusage u {};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<uint64_t>(u.ru_maxrss);
}


struct AgentServer::Impl {
  AgentServerOptions options;
  std::unique_ptr<net::Worker> worker;
  uint16_t port = 0;
  std::unique_ptr<ClientForwarder> forwarder;
  std::unique_ptr<AgentCore> core;
  node::NodeLog log{"agent", node::LogLevel::kInfo};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<ForwardResult> outbox;
  std::atomic<bool> has_outbox{false};

  void Deliver(ForwardResult r) {
    {
      std::lock_guard<std::mutex> lock(mu);
      outbox.push_back(std::move(r));
      has_outbox.store(true);
    }
    worker->Wake();
  }

  nlohmann::json Stats() const {
    nlohmann::json j = core->Stats();
    j["cpu_seconds"] = node::ProcessCpuSeconds();
    j["max_rss_kib"] = ProcessMaxRssKib();
    j["memory_nodes"] = forwarder->memory_nodes();
    j["options"]["max_message_bytes"] = options.max_message_bytes;
    j["options"]["node_window_bytes"] = options.node_window_bytes;
    return j;
  }

  // The agent acts for options.tenant: a connection may use it if it may
  // act for that tenant.
  Status AllowedPeer(net::EndpointId from) const {
    return node::CheckTenantClaim(*worker, from, options.tenant, "agent").status();
  }

  void OnRequest(net::EndpointId from, std::span<const uint8_t> payload) {
    Result<farmem::AgentRequest> q = farmem::DecodeAgentRequest(payload);
    if (!q.ok()) {
      log.Warn("dropping a malformed request from connection {}: {}", from, q.status().message());
      return;
    }
    // The agent acts for one tenant at the memory nodes: only connections
    // proven to be that tenant's (or the cluster's) are served.
    if (Status allowed = AllowedPeer(from); !allowed.ok()) {
      farmem::AgentReply a;
      a.request_id = q->request_id;
      a.status = allowed;
      (void)worker->Send(from, farmem::kAmAgentReply, farmem::EncodeAgentReply(a));
      return;
    }
    if (q->op == farmem::AgentOp::kStats) {  // the core's counters plus the process's
      farmem::AgentReply a;
      a.request_id = q->request_id;
      const std::string text = Stats().dump();
      a.data.assign(text.begin(), text.end());
      (void)worker->Send(from, farmem::kAmAgentReply, farmem::EncodeAgentReply(a));
      return;
    }
    core->OnRequest(from, std::move(*q));
  }

  void OnControl(net::EndpointId from, std::span<const uint8_t> payload) {
    nlohmann::json seq;
    Result<node::ControlRequest> c = node::ParseControl(payload, &seq);
    if (!c.ok()) {
      (void)node::SendControlReply(*worker, from, seq, c.status(), log);
      return;
    }
    Result<nlohmann::json> answer = Status::InvalidArgument(fmt::format("control: the agent has no op '{}'", c->op));
    if (c->op == "stats") {
      answer = nlohmann::json{{"role", "agent"}, {"instance", options.instance_id}, {"insecure", worker->open()},
                              {"counters", Stats()}};
    } else if (c->op == "shutdown") {
      Status allowed = node::RequireClusterPeer(*worker, from, "shutdown");
      answer = allowed.ok() ? Result<nlohmann::json>(nlohmann::json::object()) : Result<nlohmann::json>(allowed);
      if (allowed.ok()) stop.store(true);
    }
    node::SendControlReply(*worker, from, seq, std::move(answer), log);
  }

  Status Run() {
    while (!stop.load()) {
      (void)worker->RunUntil([this] { return stop.load() || has_outbox.load() || core->has_work(); },
                             std::chrono::milliseconds(1000));
      std::vector<ForwardResult> results;
      {
        std::lock_guard<std::mutex> lock(mu);
        results.swap(outbox);
        has_outbox.store(false);
      }
      for (ForwardResult& r : results) core->OnResult(std::move(r));
      core->Flush();
    }
    return Status::Ok();
  }
};

AgentServer::AgentServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AgentServer::~AgentServer() {
  if (impl_->forwarder) impl_->forwarder->Stop();
  impl_->core.reset();
  impl_->worker.reset();
}

Result<std::unique_ptr<AgentServer>> AgentServer::Start(const AgentServerOptions& options) {
  PULSE_RETURN_IF_ERROR(ValidateAgentOptions(options.agent));
  if (!options.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : options.cpus) {
      if (cpu < 0 || cpu >= CPU_SETSIZE) return Status::InvalidArgument(fmt::format("agent: cpu {} is out of range", cpu));
      CPU_SET(cpu, &set);
    }
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
      return Status::InvalidArgument(fmt::format("agent: cannot restrict the process to cpus {}", fmt::join(options.cpus, ",")));
  }
  PULSE_ASSIGN_OR_RETURN(node::LogLevel level, node::ParseLogLevel(options.log_level));
  auto impl = std::make_unique<Impl>();
  Impl* raw = impl.get();
  impl->options = options;
  impl->log = node::NodeLog("agent", level);
  net::WorkerOptions wo = options.worker;
  if (wo.name == "pulse") wo.name = "agent";
  farmem::SendPagesEagerly(&wo);  // the replies to the hosts' lanes
  PULSE_ASSIGN_OR_RETURN(impl->worker, net::Worker::Create(wo));
  ForwarderOptions fo;
  fo.max_message_bytes = options.max_message_bytes;
  fo.node_window_bytes = options.node_window_bytes;
  fo.memory_timeout = options.memory_timeout;
  impl->forwarder = std::make_unique<ClientForwarder>(fo, [raw](ForwardResult r) { raw->Deliver(std::move(r)); });
  impl->core = std::make_unique<AgentCore>(options.agent, impl->forwarder.get(),
                                           [raw](uint64_t host, farmem::AgentReply a) {
                                             if (a.stamps.received_ns != 0) a.stamps.replied_ns = farmem::AgentClockNanos();
                                             (void)raw->worker->Send(host, farmem::kAmAgentReply,
                                                                     farmem::EncodeAgentReply(a));
                                           });
  ClientOptions co;
  co.switch_address = options.switch_address;
  co.tenant = options.tenant;
  co.connect_timeout = options.connect_timeout;
  co.worker.name = "agent-forward";
  // Both threads poll as the agent was told (`--poll-window-us`): with the
  // client's default 50 us window the forwarding thread spun after every
  // message on a machine whose cores the memory nodes need (docs/evaluation.md:
  // proxy+async CC 3.7 -> 2.0 s, a quarter less agent CPU, at window 0).
  co.worker.poll_mode = options.worker.poll_mode;
  co.worker.poll_window_us = options.worker.poll_window_us;
  co.worker.poll_when_core_idle = options.worker.poll_when_core_idle;
  co.worker.yield_while_polling = options.worker.yield_while_polling;
  PULSE_RETURN_IF_ERROR(impl->forwarder->Start(co));
  impl->worker->SetHandler(farmem::kAmAgentRequest,
                           [raw](net::EndpointId from, std::span<const uint8_t> p) { raw->OnRequest(from, p); });
  impl->worker->SetHandler(kAmControl,
                           [raw](net::EndpointId from, std::span<const uint8_t> p) { raw->OnControl(from, p); });
  impl->worker->SetDisconnectHandler([raw](net::EndpointId ep, const Status&) {
    raw->core->OnHostGone(ep);
    (void)raw->worker->Close(ep);
  });
  PULSE_ASSIGN_OR_RETURN(impl->port, impl->worker->Listen(options.listen_host, options.port));
  return std::unique_ptr<AgentServer>(new AgentServer(std::move(impl)));
}

uint16_t AgentServer::port() const { return impl_->port; }
Status AgentServer::Run() { return impl_->Run(); }
void AgentServer::RequestStop() {
  impl_->stop.store(true);
  impl_->worker->Wake();
}

}  // namespace pulse::agent
