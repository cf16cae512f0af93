#include "client/event_loop.h"

#include <algorithm>

namespace pulse {

using Clock = std::chrono::steady_clock;

void EventLoop::Add(EventSource* source) { sources_.push_back(source); }

void EventLoop::Remove(EventSource* source) {
  sources_.erase(std::remove(sources_.begin(), sources_.end(), source), sources_.end());
}

bool EventLoop::RunAllReady() {
  bool any = false;
  // A callback may add or remove sources: iterate over a copy.
  const std::vector<EventSource*> sources = sources_;
  for (EventSource* s : sources)
    if (std::find(sources_.begin(), sources_.end(), s) != sources_.end() && s->RunReady()) any = true;
  return any;
}

bool EventLoop::AnyReady() const {
  return std::any_of(sources_.begin(), sources_.end(), [](const EventSource* s) { return s->has_ready(); });
}

bool EventLoop::AnyAwaitingReplies() const {
  return std::any_of(sources_.begin(), sources_.end(),
                     [](const EventSource* s) { return s->awaiting_replies(); });
}

void EventLoop::Poll() {
  Flush();
  worker_->Progress();
  const std::vector<EventSource*> sources = sources_;
  for (EventSource* s : sources) s->Service();
  RunAllReady();
  Flush();
}

Status EventLoop::DriveUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  for (;;) {
    RunAllReady();
    if (pred()) {
      Flush();
      return Status::Ok();
    }
    const std::vector<EventSource*> sources = sources_;
    for (EventSource* s : sources) s->Service();
    RunAllReady();
    if (pred()) {
      Flush();
      return Status::Ok();
    }
    Clock::time_point next = Clock::time_point::max();
    for (const EventSource* s : sources_) next = std::min(next, s->NextDeadline());
    const auto now = Clock::now();
    if (now >= end) {
      Flush();
      return Status::Timeout("client: gave up waiting");
    }
    auto slice = std::min<Clock::duration>(end - now, next - std::min(next, now));
    slice = std::max<Clock::duration>(slice, std::chrono::microseconds(100));
    // A slice that times out is the normal case; a connection that fails
    // reaches its callers through the disconnect handler.
    // Flushing at each check sends what handlers queued (a re-issue after a
    // "continue" or a redirect) right after the progress that ran them.
    // The sources' BeforeWait runs only when the worker is about to sleep
    // (armed): while it polls, `ready` sees one-sided answers by itself, and
    // asking a node to announce them by message would cost it a send per
    // answer for nothing.
    const auto ready = [&] {
      Flush();
      return AnyReady() || pred();
    };
    worker_->SetAwaitingReplies(AnyAwaitingReplies());
    IgnoreError(worker_->RunUntil(ready, slice, [&] {
      for (EventSource* s : sources) s->BeforeWait();
      return ready();
    }));
    worker_->SetAwaitingReplies(false);
  }
}

}  // namespace pulse
