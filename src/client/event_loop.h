// The one wait loop of a Client's thread: drives the fabric and services
// every registered source of timers and completions (the client's
// traversals, and layers above the client such as pulse::RpcClient) so
// that any wait (a synchronous call, WaitAll, Poll) makes progress for all
// of them.  Nothing spins when idle: a wait sleeps in the fabric until a
// message, a source's next deadline or the caller's timeout, after polling
// for the worker's window (its awaiting window while a source awaits
// replies; see EventSource).
//
// Thread-safety: none; it belongs to its Client's thread.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse {

// Timers and completion callbacks serviced by an EventLoop.
class EventSource {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~EventSource() = default;
  // Handles expired timers (re-sends, timeouts).
  virtual void Service() = 0;
  // The next deadline (time_point::max() if none), which bounds how long a
  // wait sleeps.
  virtual time_point NextDeadline() const = 0;
  // Runs finished requests' callbacks (which may start or wait for new
  // work); true if any ran.
  virtual bool RunReady() = 0;
  // Whether callbacks wait to run (a wait wakes for them).
  virtual bool has_ready() const = 0;
  // Whether requests it sent still await their answers: a wait then polls
  // for the worker's awaiting_poll_window_us (off by default) before it
  // sleeps (net::Worker::SetAwaitingReplies); a loop whose sources await
  // nothing is idle and keeps the base window.
  virtual bool awaiting_replies() const { return false; }
  // The loop's worker is armed and about to sleep in the fabric (has_ready()
  // is asked once more after): a source whose completions raise no event of
  // their own arranges here to be woken (RingSender).  Not called while the
  // worker polls.
  virtual void BeforeWait() {}
};

class EventLoop {
 public:
  // `worker` must outlive the loop.
  explicit EventLoop(net::Worker* worker) : worker_(worker) {}

  // Sources are serviced in the order added; each must stay alive until
  // removed.
  void Add(EventSource* source);
  void Remove(EventSource* source);
  // Runs `flush` before every wait in the fabric and before Poll() and
  // DriveUntil() return: what the sources queued to send (aggregated
  // traversal messages, Connections::FlushTraversals) leaves then.
  void SetFlush(std::function<void()> flush) { flush_ = std::move(flush); }

  // Progress without blocking: fabric, timers, callbacks.
  void Poll();
  // Drives everything until pred() is true (OK) or `timeout` passed
  // (Timeout).
  Status DriveUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

 private:
  bool RunAllReady();
  bool AnyReady() const;
  bool AnyAwaitingReplies() const;
  void Flush() {
    if (flush_) flush_();
  }

  net::Worker* worker_;
  std::function<void()> flush_;
  std::vector<EventSource*> sources_;
};

}  // namespace pulse
