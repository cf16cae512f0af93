// Replicas' messages into each other's rings (replica_rings.h).
#include "tx/replica_rings.h"

#include <utility>

#include "memnode/extension_entry.h"
#include "tx/tx_wire.h"

namespace pulse::tx {

ReplicaRings::ReplicaRings(net::Worker* worker, ReplicaRingsOptions options, SendFn send_message)
    : worker_(worker), options_(options), send_message_(std::move(send_message)) {}

ReplicaRings::~ReplicaRings() = default;

ReplicaRings::Ring* ReplicaRings::RingTo(net::EndpointId ep) {
  if (auto it = rings_.find(ep); it != rings_.end()) return it->second.client ? &it->second : nullptr;
  // Opening progresses the Worker, whose handlers may Close() connections:
  // nothing of rings_ is held across it.
  net::ring::RingClientOptions o;
  o.geometry = options_.geometry;
  o.open_timeout = options_.open_timeout;
  o.require_native_rma = true;
  Result<std::unique_ptr<net::ring::RingClient>> opened = net::ring::RingClient::Open(worker_, ep, o);
  Ring& r = rings_[ep];
  if (!opened.ok()) {
    ++counters_.opens_failed;
    r.why_not = opened.status().ToString();
    return nullptr;
  }
  if (!worker_->IsConnected(ep)) {  // failed while the open waited
    closed_.push_back(std::move(*opened));
    r.why_not = "the connection failed";
    return nullptr;
  }
  ++counters_.rings_opened;
  r.client = std::move(*opened);
  return &r;
}

bool ReplicaRings::Send(net::EndpointId ep, std::vector<uint8_t> message) {
  Ring* r = RingTo(ep);
  if (r != nullptr && r->client->has_credit() &&
      message.size() + memnode::kExtensionEntryHeaderBytes <= r->client->geometry().max_payload()) {
    memnode::EncodeExtensionEntry(kAmTxRequest, message, &entry_);
    Result<uint64_t> seq = r->client->Post(entry_);
    if (seq.ok()) {
      ++counters_.by_ring;
      r->in_flight.emplace(*seq, std::move(message));
      return true;
    }
  }
  ++counters_.by_message;
  send_message_(ep, std::move(message));
  return false;
}

void ReplicaRings::Poll() {
  closed_.clear();
  for (auto& [ep, r] : rings_) {
    if (r.client == nullptr || r.client->in_flight() == 0) continue;
    const net::EndpointId to = ep;
    Ring* ring = &r;
    r.client->Poll([this, to, ring](uint64_t seq, const Status& status, std::span<const uint8_t>) {
      auto it = ring->in_flight.find(seq);
      if (it == ring->in_flight.end()) return;
      if (!status.ok()) {
        // The receiver's replica never saw it (extension_entry.h).
        ++counters_.refused;
        send_message_(to, std::move(it->second));
      }
      ring->in_flight.erase(it);
    });
  }
}

void ReplicaRings::Close(net::EndpointId ep) {
  // The entry stays (endpoint ids are never reused), so that nothing the
  // caller iterates goes away under it and no ring is opened on it again.
  auto it = rings_.find(ep);
  if (it == rings_.end()) return;  // a client's connection, say
  Ring& r = it->second;
  if (r.client) closed_.push_back(std::move(r.client));
  r.in_flight.clear();
  r.why_not = "the connection failed";
}

nlohmann::json ReplicaRings::Stats() const {
  nlohmann::json paths = nlohmann::json::object();
  for (const auto& [ep, r] : rings_) paths[std::to_string(ep)] = r.client ? "ring" : "am: " + r.why_not;
  return {{"by_ring", counters_.by_ring},
          {"by_message", counters_.by_message},
          {"refused", counters_.refused},
          {"rings_opened", counters_.rings_opened},
          {"opens_failed", counters_.opens_failed},
          {"paths", paths}};
}

}  // namespace pulse::tx
