// What the server commands (`pulse switch`, `pulse memnode`, `pulse agent`)
// share: clean shutdown on SIGINT/SIGTERM, HOST:PORT and log-level flags,
// and the UCX environment of a local cluster's processes.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "node/node_log.h"

namespace pulse::tools {

// SIGINT and SIGTERM, delivered to one thread that calls `on_signal`.  The
// constructor blocks them in the calling thread, and so in every thread it
// starts afterwards (UCX's among them): construct it before any Worker.
// A second signal while the first shutdown is under way exits at once.
class ShutdownSignals {
 public:
  ShutdownSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    signal(SIGPIPE, SIG_IGN);
  }
  ~ShutdownSignals() {
    if (!thread_.joinable()) return;
    done_.store(true);
    pthread_kill(thread_.native_handle(), SIGTERM);  // ends its sigwait
    thread_.join();
  }
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  void Start(std::function<void(int)> on_signal) {
    thread_ = std::thread([this, on_signal = std::move(on_signal)] {
      int count = 0;
      for (;;) {
        int sig = 0;
        if (sigwait(&set_, &sig) != 0 || done_.load()) return;
        if (++count > 1) _exit(128 + sig);
        received_.store(true);
        on_signal(sig);
      }
    });
  }
  bool received() const { return received_.load(); }

 private:
  sigset_t set_;
  std::atomic<bool> done_{false};
  std::atomic<bool> received_{false};
  std::thread thread_;
};

// Splits "host:port" ("[v6addr]:port" too).
inline bool SplitHostPort(const std::string& text, std::string* host, uint16_t* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
  std::string h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  const std::string p = text.substr(colon + 1);
  if (h.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
  const unsigned long v = std::stoul(p);
  if (v > 65535) return false;
  *host = h;
  *port = static_cast<uint16_t>(v);
  return true;
}

inline const CLI::Validator kHostPort(
    [](std::string& text) -> std::string {
      std::string host;
      uint16_t port = 0;
      if (SplitHostPort(text, &host, &port)) return "";
      return "expected HOST:PORT (port 0-65535), got '" + text + "'";
    },
    "");

inline const CLI::Validator kLogLevel(
    [](std::string& text) -> std::string {
      auto level = node::ParseLogLevel(text);
      return level.ok() ? "" : level.status().message();
    },
    "");

// UCX leaves its shared-memory transports out for endpoints that report
// dead peers unless the first two are set (include/pulse/net.h); the nodes
// of a local cluster want them.  CM_REUSEADDR lets a restarted node listen
// again at once on its address while connections of its predecessor linger
// in TIME_WAIT (two live listeners on one port still fail).  An explicit
// setting in the environment wins.
inline void DefaultUcxEnvironment() {
  setenv("UCX_POSIX_ERROR_HANDLING", "y", /*overwrite=*/0);
  setenv("UCX_SYSV_ERROR_HANDLING", "y", /*overwrite=*/0);
  setenv("UCX_CM_REUSEADDR", "y", /*overwrite=*/0);
}

}  // namespace pulse::tools
