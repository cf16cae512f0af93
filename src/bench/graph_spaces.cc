#include "bench/graph_spaces.h"

#include <unistd.h>

#include <atomic>

#include <fmt/format.h>

#include "bench/graph_counters.h"
#include "pulse/farmem/agent_backend.h"
#include "pulse/farmem/host_agent.h"

namespace pulse::bench {
namespace {

class LocalGraphSpace : public GraphSpace {
 public:
  graph::ArraySpace& space() override { return *space_; }
  std::vector<std::pair<std::string, double>> Counters() override { return {}; }

 private:
  std::unique_ptr<graph::ArraySpace> space_ = graph::MakeLocalArraySpace();
};

// Arrays as far-memory regions of a host agent: each Allocate maps an
// anonymous region (zero-filled), MarkReadOnly hands it to the agent's
// MarkReadOnly (flushed; the offload agent may cache it), Free unmaps and
// destroys it.
class FarGraphSpace : public GraphSpace, public graph::ArraySpace {
 public:
  // `probe` (may be null: no cluster) adds the memory nodes' and the
  // offload agent's counters to the host agent's.
  // `hops` (may be null): the host agent's AgentBackend, whose lanes time
  // the hop to the offload agent.
  FarGraphSpace(std::unique_ptr<farmem::HostAgent> agent, std::unique_ptr<ClusterCounterProbe> probe,
                const farmem::AgentBackend* hops)
      : agent_(std::move(agent)), probe_(std::move(probe)), hops_(hops) {}

  graph::ArraySpace& space() override { return *this; }

  std::vector<std::pair<std::string, double>> Counters() override {
    farmem::HostAgentStats s = agent_->stats();
    NamedCounters out = {{"faults", s.faults},
            {"coalesced_faults", s.coalesced_faults},
            {"write_faults", s.write_faults},
            {"pages_fetched", s.pages_fetched},
            {"pages_written_back", s.pages_written_back},
            {"evictions", s.evictions},
            {"host_bytes_on_demand", s.bytes_on_demand},
            {"host_bytes_prefetch", s.bytes_prefetch},
            {"host_bytes_write_back", s.bytes_write_back},
            {"host_fetch_micros", s.fetch_micros},
            {"host_write_back_micros", s.write_back_micros}};
    if (hops_ != nullptr) {
      const farmem::AgentHopStats h = hops_->hop_stats();
      out.insert(out.end(), {{"hop_reads_timed", h.reads_timed},
                             {"hop_send_ns", h.send_ns},
                             {"hop_to_agent_ns", h.to_agent_ns},
                             {"hop_agent_ns", h.agent_ns},
                             {"hop_from_agent_ns", h.from_agent_ns},
                             {"hop_deliver_ns", h.deliver_ns},
                             {"hop_reads_slept", h.reads_slept},
                             {"hop_from_agent_slept_ns", h.from_agent_slept_ns}});
    }
    if (probe_ != nullptr) {
      // A cluster that stops answering shows as a missing figure, not a
      // failed run (the run's own errors say why).
      Result<NamedCounters> cluster = probe_->Read();
      if (cluster.ok()) out.insert(out.end(), cluster->begin(), cluster->end());
    }
    return out;
  }

  Result<void*> Allocate(const std::string& name, size_t bytes) override {
    // Region names are shared by the machine's processes: the pid and a
    // counter keep this run's apart.
    std::string region = fmt::format("graph-{}-{}-{}", getpid(), next_id_++, name);
    PULSE_ASSIGN_OR_RETURN(farmem::Region * r, agent_->MapAnonymous(region, bytes));
    return r->base;
  }

  Status MarkReadOnly(void* base) override {
    farmem::Region* r = agent_->Find(base);
    if (r == nullptr) return Status::NotFound("far graph space: MarkReadOnly of an address no region holds");
    return agent_->MarkReadOnly(r);
  }

  Status Free(void* base) override {
    farmem::Region* r = agent_->Find(base);
    if (r == nullptr) return Status::NotFound("far graph space: Free of an address no region holds");
    return agent_->Unmap(r);
  }

 private:
  std::unique_ptr<farmem::HostAgent> agent_;
  std::unique_ptr<ClusterCounterProbe> probe_;
  const farmem::AgentBackend* hops_ = nullptr;  // owned by agent_
  uint64_t next_id_ = 0;
};

}  // namespace

std::vector<std::string> GraphSystems() { return {"local", "memserver", "proxy", "agent", "ssd", "offload"}; }

bool GraphSystemNeedsCluster(const std::string& system) {
  return system == "memserver" || system == "proxy" || system == "agent" || system == "offload";
}

bool GraphSystemNeedsAgent(const std::string& system) { return system == "proxy" || system == "agent"; }

Result<std::unique_ptr<GraphSpace>> MakeGraphSpace(const std::string& system, const GraphSpaceOptions& options) {
  if (system == "local") return std::unique_ptr<GraphSpace>(std::make_unique<LocalGraphSpace>());
  if (system == "offload")
    return Status::InvalidArgument("graph system 'offload' runs BFS as traversals, not over an ArraySpace");
  auto mode = farmem::ParseBackendMode(system);
  if (!mode.ok())
    return Status::InvalidArgument(fmt::format("graph system '{}' is not one of local, memserver, proxy, agent, ssd", system));
  farmem::HostAgentOptions o;
  o.mode = *mode;
  o.page_bytes = options.page_bytes;
  o.buffer_bytes = options.buffer_bytes;
  o.client.switch_address = options.switch_address;
  o.agent_address = options.agent_address;
  o.ssd_directory = options.ssd_directory;
  // Proxy and agent: the backend made here, so that its hop figures can be
  // read (MakeBackend's choice otherwise).
  std::unique_ptr<farmem::PageBackend> backend;
  const farmem::AgentBackend* hops = nullptr;
  if (GraphSystemNeedsAgent(system) && !options.agent_address.empty()) {
    farmem::AgentBackendOptions ao;
    ao.agent_address = options.agent_address;
    PULSE_ASSIGN_OR_RETURN(auto b, farmem::AgentBackend::Connect(ao));
    hops = b.get();
    backend = std::move(b);
  }
  PULSE_ASSIGN_OR_RETURN(auto agent, farmem::HostAgent::Create(o, std::move(backend)));
  std::unique_ptr<ClusterCounterProbe> probe;
  if (GraphSystemNeedsCluster(system)) {
    PULSE_ASSIGN_OR_RETURN(probe, ClusterCounterProbe::Create(options.switch_address,
                                                              GraphSystemNeedsAgent(system) ? options.agent_address : ""));
  }
  return std::unique_ptr<GraphSpace>(std::make_unique<FarGraphSpace>(std::move(agent), std::move(probe), hops));
}

}  // namespace pulse::bench
