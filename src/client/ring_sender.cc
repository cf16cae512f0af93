// The client's side of the ring request path (ring_sender.h).
#include "client/ring_sender.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace pulse {

Result<RequestPath> EffectiveRequestPath(const ClientOptions& options) {
  const char* env = std::getenv(kRequestPathEnvironmentVariable);
  if (env == nullptr || *env == '\0') return options.request_path;
  const std::string v = env;
  if (v == "auto") return RequestPath::kAuto;
  if (v == "ring") return RequestPath::kRing;
  if (v == "am") return RequestPath::kMessages;
  return Status::InvalidArgument(std::string(kRequestPathEnvironmentVariable) + "=" + v +
                                 " is none of auto, ring, am");
}

Result<RingLayout> EffectiveRingLayout(const ClientOptions& options) {
  const char* env = std::getenv(kRingLayoutEnvironmentVariable);
  if (env == nullptr || *env == '\0') return options.ring_layout;
  const std::string v = env;
  if (v == "slots") return RingLayout::kSlots;
  if (v == "double") return RingLayout::kDoubleLayer;
  return Status::InvalidArgument(std::string(kRingLayoutEnvironmentVariable) + "=" + v + " is neither slots nor double");
}

RingSender::RingSender(Connections* connections, ClientCounters* counters, DeliverFn deliver)
    : connections_(connections), counters_(counters), deliver_(std::move(deliver)) {}

RingSender::~RingSender() {
  if (!rings_.empty()) connections_->worker->SetHandler(net::ring::kAmRingAnswered, {});
}

void RingSender::Open(RequestPath path, RingLayout layout, uint32_t slots, uint32_t slot_bytes) {
  for (const MemNode& n : connections_->nodes) {
    if (path == RequestPath::kMessages) {
      no_ring_[n.id] = "request_path is am";
      continue;
    }
    if (n.ep == net::kInvalidEndpoint || n.lost) {
      no_ring_[n.id] = "not connected";
      continue;
    }
    net::ring::RingClientOptions o;
    o.geometry = net::ring::MakeGeometry(
        layout == RingLayout::kDoubleLayer ? net::ring::Layout::kDoubleLayer : net::ring::Layout::kSlots, slots,
        slot_bytes);
    o.require_native_rma = path == RequestPath::kAuto;
    o.open_timeout = connections_->options.connect_timeout;
    Result<std::unique_ptr<net::ring::RingClient>> ring = net::ring::RingClient::Open(connections_->worker.get(), n.ep, o);
    if (!ring.ok()) {
      no_ring_[n.id] = ring.status().ToString();
      continue;
    }
    rings_[n.id] = NodeRing{n.ep, std::move(ring).value()};
  }
  // kAmRingAnswered only ends a wait (its arrival is progress); the
  // answers are taken from the rings.
  if (!rings_.empty()) {
    connections_->worker->SetHandler(net::ring::kAmRingAnswered, [](net::EndpointId, std::span<const uint8_t>) {});
  }
}

void RingSender::BeforeWait() {
  for (auto& [node, r] : rings_) {
    if (r.ring->in_flight() > 0) (void)r.ring->PrepareToWait();
  }
}

bool RingSender::TrySend(const TraversalMessage& m) {
  if (rings_.empty()) return false;
  const MemNode* n = connections_->NodeFor(m.cur_ptr);
  if (n == nullptr) return false;
  auto it = rings_.find(n->id);
  if (it == rings_.end() || it->second.ep != n->ep) return false;
  Result<uint64_t> posted = it->second.ring->Post(EncodeMessage(m));
  if (!posted.ok()) {
    ++counters_->ring_fallbacks;
    return false;
  }
  ++counters_->ring_requests;
  schedule_.OnProgress(std::chrono::steady_clock::now());
  // The answer raises no event: without this the Worker's window would
  // count from the last message, long past for a client whose traffic is
  // all ring, and every wait would sleep (and cost the node a message to
  // end it) instead of polling for the answer.
  connections_->worker->NoteActivity();
  return true;
}

void RingSender::OnDisconnect(net::EndpointId ep) {
  for (auto it = rings_.begin(); it != rings_.end(); ++it) {
    if (it->second.ep != ep) continue;
    no_ring_[it->first] = "connection lost";
    dropped_ring_stores_ += it->second.ring->counters().stores;
    rings_.erase(it);
    return;
  }
}

uint64_t RingSender::ring_stores() const {
  uint64_t stores = dropped_ring_stores_;
  for (const auto& [node, r] : rings_) stores += r.ring->counters().stores;
  return stores;
}

std::string RingSender::PathOf(uint32_t node) const {
  if (rings_.count(node) != 0) return "ring";
  auto why = no_ring_.find(node);
  return "am: " + (why == no_ring_.end() ? std::string("no ring") : why->second);
}

void RingPollSchedule::OnProgress(time_point now) {
  last_progress_ = now;
  next_ = now;
  interval_ = kFirstInterval;
}

void RingPollSchedule::OnIdlePoll(time_point now) {
  if (now < last_progress_ + kWindow) {
    next_ = now;  // within the window: keep polling
    return;
  }
  next_ = now + interval_;
  interval_ = std::min(interval_ * 2, kMaxInterval);
}

bool RingSender::AnyInFlight() const {
  for (const auto& [node, r] : rings_) {
    if (r.ring->in_flight() > 0) return true;
  }
  return false;
}

EventSource::time_point RingSender::NextDeadline() const {
  return AnyInFlight() ? schedule_.next_poll() : time_point::max();
}

bool RingSender::has_ready() const {
  bool in_flight = false;
  for (const auto& [node, r] : rings_) {
    if (r.ring->has_responses()) return true;
    in_flight = in_flight || r.ring->in_flight() > 0;
  }
  return in_flight && connections_->worker->counters().wakeups != wakeups_;
}

bool RingSender::RunReady() {
  if (!AnyInFlight()) return false;
  const auto now = std::chrono::steady_clock::now();
  // Off schedule only when a doorbell says answers are there or traffic
  // woke the Worker (has_ready).
  if (!schedule_.Due(now) && !has_ready()) return false;
  std::vector<std::vector<uint8_t>> answers;
  size_t taken = 0;
  bool news = false;
  wakeups_ = connections_->worker->counters().wakeups;
  for (auto& [node, r] : rings_) {
    r.ring->DoneWaiting();
    ++ring_polls_;
    const uint32_t doorbell = r.ring->doorbell();
    news = news || doorbell != r.doorbell;
    r.doorbell = doorbell;
    taken += r.ring->Poll([&answers](uint64_t, const Status& s, std::span<const uint8_t> payload) {
      // Empty: the node sent the answer another way (by the switch) or a
      // re-send took this entry's place.  An error: the entry was refused
      // as malformed; the state machine's timer re-sends.
      if (s.ok() && !payload.empty()) answers.emplace_back(payload.begin(), payload.end());
    });
  }
  if (taken > 0 || news) {
    schedule_.OnProgress(now);
    connections_->worker->NoteActivity();
  } else {
    schedule_.OnIdlePoll(now);
  }
  // Delivered after the polls: an answer may start new requests.
  for (const std::vector<uint8_t>& a : answers) deliver_(a);
  return !answers.empty();
}

}  // namespace pulse
