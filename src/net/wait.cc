// Driving the worker: progress, the three poll modes, RunUntil.
//
// Adaptive mode: after traffic the thread keeps calling ucp_worker_progress
// for poll_window_us (awaiting_poll_window_us while its owner awaits
// replies) (waking a sleeping process costs tens of microseconds
// on a small VM, so a reply that comes soon is caught while polling); after
// that it arms the worker (ucp_worker_arm) and sleeps in ppoll on the
// worker's event fd until traffic, a Wake() or the deadline.  Under the
// idle-core rule (poll_when_core_idle) it polls only while at most one
// thread waits for a CPU, and sleeps at once otherwise.
#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>

#include "net/internal.h"

namespace pulse::net {

// The idle-core rule: a read that found a thread waiting for a CPU stands
// this long; the worker's windows sleep at once meanwhile without reading
// CpuDemand again, so on a loaded machine the rule costs what window 0 does.
constexpr uint32_t kCpuBusyHoldUs = 200;

bool Worker::Impl::ProgressOnce() {
  ++counters.poll_iterations;
  bool any = ucp_worker_progress(worker) != 0;
  if (!deferred_closes.empty()) {
    std::vector<ucp_ep_h> eps;
    eps.swap(deferred_closes);
    for (ucp_ep_h ep : eps) GracefulClose(ep);
    any = true;
  }
  if (!rndv_to_start.empty()) {
    StartRndvReceives();
    any = true;
  }
  if (!failed.empty()) {
    ProcessFailures();
    any = true;
  }
  if (!deferred_completions.empty()) {
    auto list = std::move(deferred_completions);
    deferred_completions.clear();
    for (auto& [fn, status] : list) {
      ++callback_depth;
      if (fn) fn(status);
      --callback_depth;
    }
    any = true;
  }
  if (!held.empty() && ReleaseHeld(kInvalidEndpoint, /*all=*/false)) any = true;
  if (!sw_ops.empty() && RetransmitSwOps()) any = true;
  if ((listen_fd >= 0 || !links.empty()) && ServiceLinks(/*force=*/false)) any = true;
  if (!to_drain.empty()) {
    std::vector<EndpointId> ids;
    ids.swap(to_drain);
    for (EndpointId id : ids) DrainInbound(id);
    any = true;
  }
  if (!failed.empty()) {  // links that ended
    ProcessFailures();
    any = true;
  }
  if (!closing.empty() || !graveyard.empty()) ReapCloses();
  if (any) NoteActivity();
  return any;
}

namespace {

// One polling window under the idle-core rule (WorkerOptions::
// poll_when_core_idle): open while at most one thread waits for a CPU and
// the polling thread has not been preempted since the window began.  One
// waiter is allowed because a hop hands off between our own processes: on
// a quiet 2-core machine the client and two memory nodes make three
// runnable threads, and requiring a free core cut the window that pays
// there (docs/cluster.md); the waiter gets a core at the poller's next
// yield, and a yield that hands the core over ends the window.  A read
// costs a few microseconds of system calls (more on a loaded VM), so a
// busy verdict is kept for kCpuBusyHoldUs: on a loaded machine the windows
// then sleep at once for free, as with window 0.
class IdleCoreGate {
 public:
  explicit IdleCoreGate(Worker::Impl& m) : m_(m) {}

  // The check as the window begins (false: sleep at once).
  bool Open(Clock::time_point now) {
    if (now < m_.cpu_busy_until) {
      ++m_.counters.polls_cut;
      return false;
    }
    const CpuDemand d = Read(now);
    start_preemptions_ = d.preemptions;
    return Verdict(d, now);
  }

  // Re-reads the demand once kCpuDemandRecheckUs, and kCpuDemandReadSpacing
  // times the last read's cost, have passed since the last read; between
  // reads the last verdict stands.
  bool StillOpen(Clock::time_point now) {
    if (now < next_read_) return true;
    return Verdict(Read(now), now);
  }

 private:
  CpuDemand Read(Clock::time_point now) {
    ++m_.counters.cpu_demand_reads;
    const CpuDemand d = m_.options.cpu_demand ? m_.options.cpu_demand() : ReadCpuDemand();
    const Clock::time_point after = Clock::now();
    next_read_ = std::max(now + std::chrono::microseconds(kCpuDemandRecheckUs),
                          after + kCpuDemandReadSpacing * (after - now));
    return d;
  }
  bool Verdict(const CpuDemand& d, Clock::time_point now) {
    const bool busy = d.runnable > d.cores + 1;
    if (!busy && d.preemptions == start_preemptions_) return true;
    ++m_.counters.polls_cut;
    if (busy) m_.cpu_busy_until = now + std::chrono::microseconds(kCpuBusyHoldUs);
    return false;
  }

  Worker::Impl& m_;
  uint64_t start_preemptions_ = 0;
  Clock::time_point next_read_{};
};

bool ConsumeWake(Worker::Impl& m) {
  if (!m.wake_pending.load(std::memory_order_relaxed)) return false;
  if (!m.wake_pending.exchange(false, std::memory_order_acq_rel)) return false;
  ++m.counters.wake_calls;
  return true;
}

}  // namespace

Status Worker::Impl::SleepUntil(Clock::time_point deadline, const std::function<bool()>& before_sleep) {
  // The event fd only fires for new events: drain first.
  if (ProgressOnce()) return Status::Ok();
  ucs_status_t st = ucp_worker_arm(worker);
  if (st == UCS_ERR_BUSY) return Status::Ok();  // events pending: progress again
  if (st != UCS_OK) return FromUcs(st, "ucp_worker_arm");
  if (ConsumeWake(*this)) return Status::Ok();
  // Armed: a message the hook provokes now raises the event fd.
  if (before_sleep && before_sleep()) {
    ++counters.sleeps_skipped;
    return Status::Ok();
  }
  Clock::time_point now = Clock::now();
  if (now >= deadline) return Status::Timeout("deadline passed");
  Duration wait = std::min<Duration>(deadline - now, std::chrono::microseconds(options.max_sleep_us));
  if (!held.empty()) {  // FaultInjection: wake when a held message is due
    const Clock::time_point due = NextHeldRelease();
    if (due <= now) return Status::Ok();
    wait = std::min<Duration>(wait, due - now);
  }
  if (!sw_ops.empty()) {  // wake when a one-sided request is due again
    const Clock::time_point due = NextSwResend();
    if (due <= now) return Status::Ok();
    wait = std::min<Duration>(wait, due - now);
  }
  if (!links.empty()) {  // a handshake that must end by its deadline
    const Clock::time_point due = NextLinkDeadline();
    if (due <= now) return Status::Ok();
    wait = std::min<Duration>(wait, due - now);
  }
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
  timespec ts{};
  ts.tv_sec = ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  // The UCX event fd first, then the listener and the handshake links.
  std::vector<pollfd> fds;
  fds.push_back(pollfd{efd, POLLIN, 0});
  AppendLinkFds(&fds);
  ++counters.sleeps;
  int rc = ppoll(fds.data(), fds.size(), &ts, nullptr);
  if (rc > 0) ++counters.wakeups;
  for (size_t i = 1; rc > 0 && i < fds.size(); ++i) {
    if (fds[i].revents != 0) links_ready = true;
  }
  if (rc < 0 && errno != EINTR) {
    return Status::IoError(std::string("ppoll on the UCX event fd: ") + std::strerror(errno));
  }
  (void)ConsumeWake(*this);
  if (rc == 0 && Clock::now() >= deadline) return Status::Timeout("deadline passed");
  return Status::Ok();
}

Status Worker::Impl::WaitOnce(Clock::time_point deadline, const std::function<bool()>& done,
                              const std::function<bool()>& before_sleep) {
  if (ConsumeWake(*this)) return Status::Ok();
  switch (options.poll_mode) {
    case PollMode::kBusy:
      for (;;) {
        if (ProgressOnce() || ConsumeWake(*this)) return Status::Ok();
        if (Clock::now() >= deadline) return Status::Timeout("deadline passed");
      }
    case PollMode::kAdaptive: {
      // Awaiting replies, the longer window; idle, the base one (an idle
      // owner's wait sleeps as soon as that has passed).
      uint32_t window_us = options.poll_window_us;
      if (awaiting_replies && options.awaiting_poll_window_us > window_us) {
        window_us = options.awaiting_poll_window_us;
        ++counters.awaiting_polls;
      }
      if (window_us == 0) break;
      Clock::time_point spin_end = std::min(deadline, last_activity + std::chrono::microseconds(window_us));
      const Clock::time_point start = Clock::now();
      if (start >= spin_end) break;
      // The idle-core rule: poll only while nobody waits for a CPU.
      std::optional<IdleCoreGate> gate;
      if (options.poll_when_core_idle) {
        gate.emplace(*this);
        if (!gate->Open(start)) break;
      }
      // On a machine with more runnable threads than cores the peer we wait
      // for may be queued behind us on this core: after a short pure spin
      // (enough for a reply over shared memory), yield between polls.
      Clock::time_point yield_from = Clock::now() + std::chrono::microseconds(kSpinBeforeYieldUs);
      for (Clock::time_point now = Clock::now(); now < spin_end; now = Clock::now()) {
        if (ProgressOnce() || ConsumeWake(*this) || (done && done())) return Status::Ok();
        if (gate && !gate->StillOpen(now)) break;
        if (options.yield_while_polling && now >= yield_from) sched_yield();
      }
      break;
    }
    case PollMode::kSleep:
      break;
  }
  if (Clock::now() >= deadline) return Status::Timeout("deadline passed");
  return SleepUntil(deadline, before_sleep);
}

Status Worker::Impl::RunUntil(const std::function<bool()>& done, Clock::time_point deadline,
                              const std::function<bool()>& before_sleep) {
  for (;;) {
    if (done()) return Status::Ok();
    if (ProgressOnce()) {
      if (done()) return Status::Ok();
      if (Clock::now() >= deadline) return Status::Timeout("deadline passed");
      continue;
    }
    Status s = WaitOnce(deadline, done, before_sleep);
    if (s.code() == Status::Code::kTimeout) {
      return done() ? Status::Ok() : Status::Timeout("condition not met before the deadline");
    }
    if (!s.ok()) return s;
  }
}

bool Worker::Progress() {
  if (impl_->callback_depth > 0) return false;
  return impl_->ProgressOnce();
}

Status Worker::WaitForEvent(Clock::time_point deadline) {
  PULSE_RETURN_IF_ERROR(impl_->CheckBlockingAllowed("WaitForEvent"));
  return impl_->WaitOnce(deadline);
}

Status Worker::RunUntil(const std::function<bool()>& done, Duration timeout,
                        const std::function<bool()>& before_sleep) {
  PULSE_RETURN_IF_ERROR(impl_->CheckBlockingAllowed("RunUntil"));
  Status s = impl_->RunUntil(done, DeadlineAfter(timeout), before_sleep);
  if (s.code() == Status::Code::kTimeout) {
    return Status::Timeout("RunUntil: condition not met within " + MicrosText(timeout));
  }
  return s;
}

}  // namespace pulse::net
