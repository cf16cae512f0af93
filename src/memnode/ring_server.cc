// The memory node's ring request path (ring_server.h).
#include "memnode/ring_server.h"

#include <string>
#include <utility>
#include <vector>

#include "memnode/extension_entry.h"

namespace pulse::memnode {

Result<std::unique_ptr<RingServer>> RingServer::Create(net::Worker* worker, const net::ring::RingHostOptions& options,
                                                       uint32_t max_scratch_bytes, MemNodeService* service,
                                                       const MemNodeService::SendFn* send,
                                                       ServiceEntryFn to_service) {
  std::unique_ptr<RingServer> server(new RingServer(max_scratch_bytes, service, send, std::move(to_service)));
  RingServer* self = server.get();
  PULSE_ASSIGN_OR_RETURN(server->host_,
                         net::ring::RingHost::Create(worker, options, [self, worker](const net::ring::RingHost::Request& r) {
                           self->OnEntry(*worker, r);
                         }));
  return server;
}

void RingServer::OnServiceEntry(const net::ring::RingHost::Request& r) {
  Result<ExtensionEntry> e = DecodeExtensionEntry(r.payload);
  if (!e.ok()) {
    ++decode_errors_;
    (void)host_->Respond(r.ring, r.seq, e.status(), {});
    return;
  }
  Status taken = to_service_ ? to_service_(r.ep, e->am, e->message)
                             : Status::NotFound("this node hosts no service on ring entries");
  if (taken.ok()) {
    ++service_entries_;
  } else {
    ++service_refused_;
  }
  (void)host_->Respond(r.ring, r.seq, taken, {});
}

void RingServer::OnEntry(net::Worker& worker, const net::ring::RingHost::Request& r) {
  if (IsExtensionEntry(r.payload)) return OnServiceEntry(r);
  // Decoded into a scratch pad an earlier answer left (Route): no
  // allocation per entry once the ring is warm.
  TraversalMessage m;
  if (!spare_scratch_.empty()) {
    m.scratch = std::move(spare_scratch_.back());
    spare_scratch_.pop_back();
  }
  Status decoded = DecodeMessageInto(r.payload, max_scratch_bytes_, &m);
  if (!decoded.ok() || m.kind != MessageKind::kRequest) {
    ++decode_errors_;
    (void)host_->Respond(r.ring, r.seq,
                         decoded.ok() ? Status::InvalidArgument("ring entry is not a traversal request") : decoded, {});
    return;
  }
  // A tenant's connection runs as its proven tenant, whatever it claims.
  if (!in_poll_ || r.ep != tenant_ep_) {
    tenant_ = node::TenantOf(worker, r.ep);
    tenant_ep_ = in_poll_ ? r.ep : net::kInvalidEndpoint;
  }
  if (tenant_.ok() && !tenant_->any) m.tenant = tenant_->tenant;
  // A re-sent request (the client's timer) frees the slot of the earlier one.
  if (auto it = slots_.find(m.request_id); it != slots_.end()) {
    ++superseded_;
    (void)host_->Respond(it->second.ring, it->second.seq, Status::Ok(), {});
    it->second = Slot{r.ring, r.seq};
  } else if (!spare_slots_.empty()) {
    auto node = std::move(spare_slots_.back());
    spare_slots_.pop_back();
    node.key() = m.request_id;
    node.mapped() = Slot{r.ring, r.seq};
    slots_.insert(std::move(node));
  } else {
    slots_.emplace(m.request_id, Slot{r.ring, r.seq});
  }
  service_->Handle(std::move(m), *send_);
}

size_t RingServer::Poll() {
  in_poll_ = true;
  tenant_ep_ = net::kInvalidEndpoint;
  const size_t taken = host_->Poll();
  in_poll_ = false;
  tenant_ep_ = net::kInvalidEndpoint;
  return taken;
}

bool RingServer::Route(TraversalMessage& m) {
  auto it = slots_.find(m.request_id);
  if (it == slots_.end()) return false;
  auto node = slots_.extract(it);
  const Slot slot = node.mapped();
  if (spare_slots_.size() < kMaxSpares) spare_slots_.push_back(std::move(node));
  if (m.status == TraversalStatus::kNotLocal) {
    ++forwarded_;
    (void)host_->Respond(slot.ring, slot.seq, Status::Ok(), {});
    return false;
  }
  // Encoded into a buffer reused from answer to answer (no allocation per
  // answer; the entry's check is computed over it, not over the client's
  // slot, EncodeEntry).
  size_t bytes = EncodeMessageTo(m, answer_);
  if (bytes == 0) {  // the buffer grows to the largest answer so far
    answer_.resize(EncodedMessageBytes(m));
    bytes = EncodeMessageTo(m, answer_);
  }
  Status s = host_->Respond(slot.ring, slot.seq, Status::Ok(), std::span<const uint8_t>(answer_.data(), bytes));
  if (s.code() == Status::Code::kInvalidArgument) {
    // Larger than a slot: the answer goes by the switch, the slot is freed.
    (void)host_->Respond(slot.ring, slot.seq, Status::Ok(), {});
    return false;
  }
  // NotFound: the ring closed (its client is gone); nobody to answer.
  // The answer is out: its scratch pad serves a later entry (OnEntry).
  if (spare_scratch_.size() < kMaxSpares) spare_scratch_.push_back(std::move(m.scratch));
  return true;
}

void RingServer::Close(net::EndpointId ep) {
  std::optional<uint32_t> ring = host_->RingOf(ep);
  if (!ring.has_value()) return;
  for (auto it = slots_.begin(); it != slots_.end();) {
    it = it->second.ring == *ring ? slots_.erase(it) : std::next(it);
  }
  host_->Close(ep);
}

nlohmann::json RingServer::Stats(
    const net::Worker& worker, const std::function<std::optional<uint32_t>(net::EndpointId)>& cpu_node_of) const {
  const net::ring::RingHostCounters& c = host_->counters();
  uint64_t native = 0;
  // Each ring's connection: how its answers travel and its layout (what
  // `pulse cluster status` prints per connection; the others use messages).
  nlohmann::json by_connection = nlohmann::json::object();
  for (net::EndpointId ep : host_->ring_endpoints()) {
    const bool one_sided = host_->AnswersOneSided(ep);
    if (one_sided) ++native;
    nlohmann::json& path = by_connection[std::to_string(ep)];
    path = {{"answers", one_sided ? "one-sided puts" : "pulse messages"},
            {"layout", host_->DoubleLayer(ep) ? "double" : "slots"}};
    if (std::optional<uint32_t> cpu = cpu_node_of(ep)) path["cpu_node"] = *cpu;
  }
  return nlohmann::json{{"rings", host_->ring_count()},    {"rings_native", native},
                        {"by_connection", std::move(by_connection)},
                        {"rings_double_layer", host_->double_layer_rings()},
                        {"connections", worker.endpoint_count()}, {"rings_opened", c.rings_opened},
                        {"rings_closed", c.rings_closed},  {"opens_refused", c.opens_refused},
                        {"entries", c.entries},            {"malformed", c.malformed + decode_errors_},
                        {"responses", c.responses},        {"doorbells", c.doorbells},
                        {"sleeps", c.sleeps},              {"wakes", c.wakes},
                        {"answered_wakes", c.answered_wakes}, {"sleeps_ended", c.sleeps_ended},
                        {"scans", c.scans},                {"empty_scans", c.empty_scans},
                        {"window_us", host_->window_us()},
                        {"forwarded", forwarded_},         {"superseded", superseded_},
                        {"service_entries", service_entries_}, {"service_refused", service_refused_},
                        {"in_service", slots_.size()}};
}

}  // namespace pulse::memnode
