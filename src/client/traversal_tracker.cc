#include "client/traversal_tracker.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "pulse/cluster.h"

namespace pulse {

TraversalTracker::TraversalTracker(const ClientOptions* options, TraversalPath* path, ClientCounters* counters,
                                   const TrackerClock* clock, uint64_t first_counter)
    : options_(options),
      path_(path),
      counters_(counters),
      clock_(clock),
      next_counter_(first_counter),
      tracker_(
          clock, [this](uint64_t id, Pending& p, ResendReason why) { Resend(id, p, why); },
          [this](uint64_t id, const Pending& p, uint32_t attempts) { return TimeoutStatus(id, p, attempts); }) {}

uint64_t TraversalTracker::NextId() { return MakeRequestId(path_->cpu_node(), next_counter_++); }

RetryPolicy TraversalTracker::policy() const {
  return RetryPolicy::Fixed(options_->request_timeout, options_->max_attempts);
}

void TraversalTracker::Start(const ProgramRef& program, uint64_t cur_ptr, std::vector<uint8_t> scratch,
                             uint32_t iterations, const TraverseOptions& options, Callback done) {
  Pending p;
  p.program = program;
  p.options = options;
  TraversalMessage& m = p.request;
  m.kind = MessageKind::kRequest;
  m.request_id = NextId();
  m.cpu_node = path_->cpu_node();
  m.tenant = options_->tenant;
  m.flags = (options.pulse_acc.value_or(options_->pulse_acc) ? kFlagPulseAcc : 0) |
            (program->info().has_store ? kFlagHasStore : 0);
  m.program_hash = program->hash();
  m.max_iterations = options.max_iterations;
  m.cur_ptr = cur_ptr;
  m.scratch = std::move(scratch);
  m.iterations = iterations;
  m.legs = 1;
  const uint64_t id = m.request_id;
  SendRequest(id, tracker_.Track(id, std::move(p), policy(), std::move(done)), false);
}

Status TraversalTracker::StartPing(uint64_t addr, Callback done) {
  Pending p;
  TraversalMessage& m = p.request;
  m.request_id = NextId();
  m.cpu_node = path_->cpu_node();
  m.tenant = options_->tenant;
  m.flags = kFlagNoop;
  m.cur_ptr = addr;
  const uint64_t id = m.request_id;
  // A no-op is not re-sent: it measures one round trip.
  Pending& tracked = tracker_.Track(id, std::move(p), RetryPolicy::Once(options_->request_timeout), std::move(done));
  tracked.request.routing_version = path_->routing_version();
  Status s = path_->Send(tracked.request);
  if (!s.ok()) (void)tracker_.Take(id);
  return s;
}

void TraversalTracker::Post(Callback done, Result<TraversalResult> result) {
  tracker_.Post(std::move(done), std::move(result));
}

void TraversalTracker::SendRequest(uint64_t id, Pending& p, bool retransmission) {
  const std::optional<uint32_t> owner = path_->NodeOf(p.request.cur_ptr);
  const uint32_t node = owner.value_or(UINT32_MAX);
  const bool known = known_programs_.count({p.program->hash(), node}) > 0;
  if (!known || retransmission) p.request.program = p.program->encoded();
  else p.request.program.clear();
  p.request.cpu_node = path_->cpu_node();  // it changes when a restarted switch is rejoined
  p.request.routing_version = path_->routing_version();
  p.sent_bytes = EncodedMessageBytes(p.request);
  ++p.result.issues;
  ++counters_->requests_sent;
  if (retransmission) {
    ++p.result.retransmissions;
    ++counters_->retransmissions;
  }
  if (!path_->Send(p.request).ok()) tracker_.ExpireNow(id);  // the timer path retries or fails it
}

void TraversalTracker::Resend(uint64_t id, Pending& p, ResendReason why) {
  // Same id: a restarted node answers a STORE-bearing request from its
  // record.  After a ride-out wait the tracker gives a fresh budget.
  if (why == ResendReason::kScheduled) ++counters_->unavailable_resends;
  SendRequest(id, p, /*retransmission=*/true);
}

Status TraversalTracker::TimeoutStatus(uint64_t id, const Pending& p, uint32_t attempts) {
  ++counters_->timeouts;
  const std::optional<uint32_t> owner = path_->NodeOf(p.request.cur_ptr);
  return Status::Timeout(fmt::format(
      "traversal {:#x}: no answer for cur_ptr {:#x} (memory node {}) after {} attempts of {} ms", id,
      p.request.cur_ptr, owner ? std::to_string(*owner) : "none", attempts, options_->request_timeout.count()));
}

void TraversalTracker::Reissue(uint64_t id, const TraversalMessage& from) {
  auto [p, done] = tracker_.Take(id);
  p.request.request_id = NextId();
  p.request.cur_ptr = from.cur_ptr;
  p.request.scratch = from.scratch;
  p.request.iterations = from.iterations;
  ++counters_->reissues;
  const uint64_t new_id = p.request.request_id;
  SendRequest(new_id, tracker_.Track(new_id, std::move(p), policy(), std::move(done)), false);
}

void TraversalTracker::OnMessage(std::span<const uint8_t> payload) {
  auto decoded = DecodeMessage(payload, 1 << 20);
  if (!decoded.ok()) return;  // nothing to match it to
  TraversalMessage& m = *decoded;
  const uint64_t id = m.request_id;
  Pending* found = tracker_.OnAnswer(id);
  if (found == nullptr) {
    ++counters_->stale_responses;
    return;
  }
  Pending& p = *found;
  if (p.program) CountAnswer(p, m, payload.size());
  if (m.flags & kFlagRedirect) {
    // Our table sent it to a node that does not own cur_ptr; nothing ran.
    // The switch routes by the authoritative table (ours catches up with its
    // next push).  Same id: exactly-once holds for STORE-bearing requests.
    ++counters_->redirects;
    if (m.routing_version > path_->routing_version()) path_->RefreshTable(m.routing_version);
    tracker_.Restart(id);
    if (!path_->SendToSwitch(p.request).ok()) tracker_.ExpireNow(id);
    return;
  }
  if (!p.program) {  // a no-op probe (Ping)
    TraversalResult r;
    r.status = m.status;
    return tracker_.Complete(id, std::move(r));
  }
  const std::optional<uint32_t> owner = path_->NodeOf(p.request.cur_ptr);
  if (m.status == TraversalStatus::kUnknownProgram) {
    // The node that lacks the program owns m.cur_ptr: the request's first
    // node, or one a memory node continued to by hash only.
    if (auto lacking = path_->NodeOf(m.cur_ptr)) known_programs_.erase({p.program->hash(), *lacking});
    ++counters_->unknown_programs;
    const bool continued = m.cur_ptr != p.request.cur_ptr || m.iterations != p.request.iterations;
    ++counters_->reissues;
    tracker_.Restart(id);
    if (continued && m.scratch.size() == p.request.scratch.size()) {
      // Resumed where it stopped, under the same id: the visit (id,
      // iterations) is the one the continuation was, so the node that
      // lacked the code answers it from its duplicate filter or STORE
      // record if a copy of that continuation ran there (one before a
      // restart, or one still on its way from the previous node).  A new id
      // would make it a new visit, run again.  Re-sends now start here.
      p.request.cur_ptr = m.cur_ptr;
      p.request.scratch = m.scratch;
      p.request.iterations = m.iterations;
      return SendRequest(id, p, /*retransmission=*/false);  // code attached: that node is not known to have it
    }
    return SendRequest(id, p, /*retransmission=*/true);  // same id, code attached
  }
  if (owner && m.status != TraversalStatus::kFaultBadRequest) known_programs_.insert({p.program->hash(), *owner});
  const bool again = (m.status == TraversalStatus::kContinue && p.options.follow_continue) ||
                     (m.status == TraversalStatus::kNotLocal && (p.request.flags & kFlagPulseAcc) &&
                      path_->NodeOf(m.cur_ptr).has_value());
  if (again) return Reissue(id, m);
  counters_->critical_path_messages += m.legs;
  counters_->critical_path_bytes += p.path_bytes;
  TraversalResult r{.status = m.status == TraversalStatus::kNotLocal ? TraversalStatus::kFaultInvalidPointer : m.status,
                    .cur_ptr = m.cur_ptr, .scratch = std::move(m.scratch), .iterations = m.iterations,
                    .fault_pc = m.fault_pc, .fault_addr = m.fault_addr, .offloaded = true,
                    .issues = p.result.issues, .retransmissions = p.result.retransmissions};
  counters_->traversal_iterations += m.iterations;
  if (p.program->info().has_store) path_->StoresDone();
  if (auto at = path_->NodeOf(m.fault_addr);
      m.status == TraversalStatus::kFaultInvalidPointer && at && path_->Unrouted(*at)) {
    return tracker_.Complete(id, Status::Unavailable(fmt::format(
                                     "traversal: memory node {} owning {:#x} has not registered with the switch",
                                     *at, m.fault_addr)));
  }
  if (m.status == TraversalStatus::kNodeUnavailable) {
    if (RideOutUnavailable(id, p)) return;
    return tracker_.Complete(
        id, Status::Unavailable(fmt::format("traversal: memory node owning {:#x} is unavailable{}", m.cur_ptr,
                                            options_->ride_out_unavailable.count() > 0
                                                ? fmt::format(" (re-sent for {} ms)",
                                                              options_->ride_out_unavailable.count())
                                                : "")));
  }
  if (m.status == TraversalStatus::kOutcomeUnknown) {
    return tracker_.Complete(id, Status::OutcomeUnknown(fmt::format(
                                     "traversal {:#x}: outcome unknown: the memory node owning {:#x} restarted "
                                     "after it began running this STORE-bearing request (not run again)",
                                     id, m.cur_ptr)));
  }
  tracker_.Complete(id, std::move(r));
}

void TraversalTracker::CountAnswer(Pending& p, const TraversalMessage& m, size_t answer_bytes) {
  const uint16_t later_legs = m.legs > p.request.legs ? m.legs - p.request.legs : 0;
  p.path_bytes += p.sent_bytes + uint64_t{later_legs} * answer_bytes;
  // Whatever is sent next for this traversal (a re-issue, a redirect's or a
  // ride-out's re-send) is one leg more than this answer.
  p.request.legs = m.legs;
  AddLeg(&p.request);
}

bool TraversalTracker::RideOutUnavailable(uint64_t id, Pending& p) {
  if (options_->ride_out_unavailable.count() <= 0) return false;
  const auto now = clock_->Now();
  if (p.unavailable_until == TrackerClock::time_point{}) p.unavailable_until = now + options_->ride_out_unavailable;
  if (now >= p.unavailable_until) return false;
  tracker_.ResendAt(id, std::min<TrackerClock::time_point>(now + options_->unavailable_retry_interval,
                                                           p.unavailable_until));
  return true;
}

void TraversalTracker::CheckTimeouts() {
  const std::vector<uint64_t> due = tracker_.Due();
  if (due.empty()) return;
  if (path_->switch_down()) {
    Status switch_status = path_->EnsureSwitch();
    if (!switch_status.ok()) {
      for (uint64_t id : due) tracker_.Complete(id, Status::Unavailable("traversal: " + switch_status.message()));
      return;
    }
  }
  tracker_.Service();
}

}  // namespace pulse
