// FaultInjection, the transport-boundary test hook (include/pulse/net.h):
// parsing the spec, and loss, duplication and reordering of outgoing user
// messages.  Held messages are released by later sends on their endpoint or
// by ProgressOnce() once due; the wait functions cap their sleep at the next
// release, so holding a message never makes a thread sleep or spin longer.
#include <cstdlib>
#include <functional>
#include <sstream>

#include "net/internal.h"

namespace pulse::net {
namespace {

Result<double> ParseProbability(const std::string& key, const std::string& value) {
  char* end = nullptr;
  const double p = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !(p >= 0.0 && p <= 1.0))
    return Status::InvalidArgument("fault injection: " + key + "=" + value + " is not a probability in [0, 1]");
  return p;
}

Result<uint64_t> ParseUnsigned(const std::string& key, const std::string& value, uint64_t max) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || value[0] == '-' || end != value.c_str() + value.size() || v > max)
    return Status::InvalidArgument("fault injection: " + key + "=" + value + " is not an integer in [0, " +
                                   std::to_string(max) + "]");
  return static_cast<uint64_t>(v);
}

}  // namespace

Result<FaultInjection> FaultInjection::Parse(const std::string& spec) {
  FaultInjection f;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      return Status::InvalidArgument("fault injection: '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "loss" || key == "dup" || key == "reorder") {
      auto p = ParseProbability(key, value);
      if (!p.ok()) return p.status();
      (key == "loss" ? f.loss : key == "dup" ? f.duplicate : f.reorder) = *p;
    } else if (key == "hold_us") {
      auto v = ParseUnsigned(key, value, 10'000'000);
      if (!v.ok()) return v.status();
      f.hold_us = static_cast<uint32_t>(*v);
    } else if (key == "seed") {
      auto v = ParseUnsigned(key, value, UINT64_MAX);
      if (!v.ok()) return v.status();
      f.seed = *v;
    } else if (key == "ids") {
      std::stringstream ids(value);
      std::string id;
      while (std::getline(ids, id, '+')) {
        auto v = ParseUnsigned(key, id, UINT16_MAX);
        if (!v.ok()) return v.status();
        f.message_ids.push_back(static_cast<uint16_t>(*v));
      }
    } else if (key == "rma") {
      auto v = ParseUnsigned(key, value, 1);
      if (!v.ok()) return v.status();
      f.one_sided = *v == 1;
    } else {
      return Status::InvalidArgument("fault injection: unknown key '" + key +
                                     "' (known: loss, dup, reorder, hold_us, seed, ids, rma)");
    }
  }
  return f;
}

std::string FaultInjection::ToString() const {
  std::ostringstream out;
  out << "loss=" << loss << ",dup=" << duplicate << ",reorder=" << reorder << ",hold_us=" << hold_us
      << ",seed=" << seed;
  for (size_t i = 0; i < message_ids.size(); ++i) out << (i == 0 ? ",ids=" : "+") << message_ids[i];
  if (one_sided) out << ",rma=1";
  return out.str();
}

Status Worker::Impl::SetUpFaults() {
  std::optional<FaultInjection> f = options.faults;
  if (!f) {
    const char* env = std::getenv(kFaultsEnvironmentVariable);
    if (env != nullptr && *env != '\0') {
      auto parsed = FaultInjection::Parse(env);
      if (!parsed.ok())
        return Status::InvalidArgument(std::string(kFaultsEnvironmentVariable) + ": " + parsed.status().message());
      f = *parsed;
    }
  }
  if (f && f->enabled()) {
    faults = f;
    fault_rng.seed(f->seed ^ std::hash<std::string>{}(options.name));
  }
  return Status::Ok();
}

bool Worker::Impl::FaultsApply(uint16_t msg_id) const {
  if (!faults) return false;
  if (faults->message_ids.empty()) return true;
  for (uint16_t id : faults->message_ids)
    if (id == msg_id) return true;
  return false;
}

Status Worker::Impl::SendWithFaults(Endpoint* e, uint16_t msg_id, std::vector<uint8_t>&& payload,
                                    unsigned am_id) {
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  const double lose = coin(fault_rng), twice = coin(fault_rng), hold = coin(fault_rng);
  if (am_id == kUserAmId) {
    ++counters.messages_sent;  // accepted by Send, whatever happens to it
    counters.bytes_sent += payload.size();
  }
  NoteActivity();
  if (lose < faults->loss) {
    ++counters.faults_dropped;
    return Status::Ok();
  }
  const int copies = twice < faults->duplicate ? 2 : 1;
  if (copies == 2) ++counters.faults_duplicated;
  if (hold < faults->reorder) {
    ++counters.faults_reordered;
    const Clock::time_point due = Clock::now() + std::chrono::microseconds(faults->hold_us);
    for (int c = 0; c < copies; ++c) held.push_back(HeldMessage{e->id, msg_id, payload, due, am_id});
    return Status::Ok();
  }
  const EndpointId id = e->id;
  if (copies == 2) {
    std::vector<uint8_t> copy = payload;
    PULSE_RETURN_IF_ERROR(SendNow(e, msg_id, std::move(copy), am_id));
  }
  PULSE_RETURN_IF_ERROR(SendNow(e, msg_id, std::move(payload), am_id));
  // What was held for this endpoint now goes after this message.
  ReleaseHeld(id, /*all=*/true);
  return Status::Ok();
}

bool Worker::Impl::ReleaseHeld(EndpointId ep, bool all) {
  if (held.empty()) return false;
  const Clock::time_point now = Clock::now();
  bool any = false;
  std::deque<HeldMessage> keep;
  std::deque<HeldMessage> list;
  list.swap(held);
  for (HeldMessage& h : list) {
    const bool mine = ep == kInvalidEndpoint || h.ep == ep;
    if (!mine || (!all && h.release_at > now)) {
      keep.push_back(std::move(h));
      continue;
    }
    any = true;
    Endpoint* e = Find(h.ep);
    // An endpoint that failed or closed meanwhile: the message is lost,
    // as it would be on the wire.
    if (e != nullptr && e->state == EpState::kReady && e->ep != nullptr)
      (void)SendNow(e, h.msg_id, std::move(h.payload), h.am_id);
  }
  // Messages held while these were sent (none: SendNow never holds) and the
  // ones kept stay in order.
  for (HeldMessage& h : held) keep.push_back(std::move(h));
  held.swap(keep);
  if (any) NoteActivity();
  return any;
}

Clock::time_point Worker::Impl::NextHeldRelease() const {
  Clock::time_point next = Clock::time_point::max();
  for (const HeldMessage& h : held) next = std::min(next, h.release_at);
  return next;
}

}  // namespace pulse::net
