// What the server commands (`pulse switch`, `pulse memnode`, `pulse agent`)
// share: clean shutdown on SIGINT/SIGTERM, HOST:PORT and log-level flags,
// the cluster secret (or --insecure), and the UCX environment of a local
// cluster's processes.
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
#include <fmt/format.h>

#include "node/node_log.h"
#include "pulse/net.h"

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

// How a server command gets the cluster secret its listener demands
// (docs/security.md), or is told to run without one.
struct SecretArgs {
  std::string secret_file;  // --secret-file; else $PULSE_CLUSTER_SECRET_FILE
  bool insecure = false;    // --insecure
};

inline void AddSecretFlags(CLI::App* cmd, SecretArgs* args) {
  cmd->add_option("--secret-file", args->secret_file,
                  "The cluster secret (32 bytes, mode 0600) this node proves and demands of its peers\n"
                  "(default: $PULSE_CLUSTER_SECRET_FILE, which `pulse cluster up` sets from [cluster]\n"
                  "secret_file)")
      ->type_name("PATH");
  cmd->add_flag("--insecure", args->insecure,
                "Without a secret, run open: accept any peer that has no credentials either (tests on one\n"
                "machine only; `pulse cluster status` shows the node as insecure)");
}

// Makes the secret of --secret-file the process's $PULSE_CLUSTER_SECRET_FILE
// (so that every Worker of the process, clients included, proves it) and
// checks that the file is a valid key.  Without a secret: with --insecure
// logs one warning and lets `listener` run open, else fails the command
// (exit 1) with a message naming the ways to give one.  Call before any
// Worker or thread exists (it may call setenv).
inline void ApplySecret(const SecretArgs& args, net::WorkerOptions* listener, const node::NodeLog& log) {
  auto fail = [&](const std::string& message) {
    log.Error("{}", message);
    throw CLI::RuntimeError(1);
  };
  if (!args.secret_file.empty()) setenv(net::kSecretFileEnvironmentVariable, args.secret_file.c_str(), 1);
  const char* path = getenv(net::kSecretFileEnvironmentVariable);
  if (path != nullptr && *path != '\0') {
    auto key = net::ReadKeyFile(path);
    if (!key.ok())
      fail(fmt::format("cluster secret ({}): {}", args.secret_file.empty() ? std::string("$") + net::kSecretFileEnvironmentVariable
                                                                           : std::string("--secret-file"),
                       key.status().message()));
    return;
  }
  if (!args.insecure)
    fail(fmt::format("no cluster secret: pass --secret-file FILE, set ${}, or name it in [cluster] secret_file of the "
                     "config `pulse cluster up` starts this node from; --insecure runs the node open (any peer "
                     "without credentials is let in)",
                     net::kSecretFileEnvironmentVariable));
  log.Warn("--insecure and no cluster secret: this node lets in any peer without credentials");
  listener->insecure = true;
}

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
