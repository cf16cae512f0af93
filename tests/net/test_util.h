// Helpers for the pulse::net tests: a Worker on its own thread, and a peer
// in a separate process (tests/net/net_peer.cc, started by fork + exec).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "net/peer_protocol.h"
#include "pulse/net.h"

namespace pulse::net::testing {

using namespace std::chrono_literals;

// The net tests' Workers may listen without a cluster secret (open, see
// WorkerOptions::insecure) unless the test gives them one.
inline std::unique_ptr<Worker> MakeWorker(WorkerOptions options = {}) {
  options.insecure = true;
  auto r = Worker::Create(options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

// A Worker driven by its own thread.  `setup` runs on that thread right
// after the Worker is created and has listened on 127.0.0.1 (port()).
// `Call` runs a function on the thread, between waits.
class PeerThread {
 public:
  explicit PeerThread(WorkerOptions options = {}, std::function<void(Worker&)> setup = {})
      : thread_([this, options, setup] { Run(options, setup); }) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, 20s, [this] { return ready_; });
  }
  ~PeerThread() { Stop(); }

  uint16_t port() const { return port_; }
  bool ok() const { return port_ != 0; }

  // Runs `fn` on the peer's thread and waits for it (at most 10 s).
  bool Call(std::function<void(Worker&)> fn) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back([fn, done](Worker& w) {
        fn(w);
        done->store(true);
      });
      if (worker_ != nullptr) worker_->Wake();
    }
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return done->load(); });
  }

  // Stops driving the worker (it stays alive, unprogressed) until Resume().
  void Pause() { Call([this](Worker&) { paused_ = true; }); }
  void Resume() {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = false;
    cv_.notify_all();
  }

  void Stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      paused_ = false;
      cv_.notify_all();
      if (worker_ != nullptr) worker_->Wake();
    }
    thread_.join();
  }

 private:
  void Run(const WorkerOptions& options, const std::function<void(Worker&)>& setup) {
    std::unique_ptr<Worker> worker = MakeWorker(options);
    uint16_t port = 0;
    if (worker != nullptr) {
      auto p = worker->Listen("127.0.0.1", 0);
      EXPECT_TRUE(p.ok()) << p.status().ToString();
      if (p.ok()) port = *p;
      if (setup) setup(*worker);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      worker_ = worker.get();
      port_ = port;
      ready_ = true;
      cv_.notify_all();
    }
    if (worker == nullptr) return;
    for (;;) {
      std::vector<std::function<void(Worker&)>> calls;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (stop_) break;
        calls.swap(calls_);
      }
      for (auto& c : calls) c(*worker);
      if (!calls.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        cv_.notify_all();
      }
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (paused_) {
          cv_.wait_for(lock, 30s, [this] { return !paused_ || stop_; });
          continue;
        }
      }
      (void)worker->RunUntil(
          [this] {
            std::lock_guard<std::mutex> lock(mu_);
            return stop_ || !calls_.empty();
          },
          1s);
    }
    std::lock_guard<std::mutex> lock(mu_);
    worker_ = nullptr;
    worker.reset();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
  bool stop_ = false;
  bool paused_ = false;
  std::vector<std::function<void(Worker&)>> calls_;
  Worker* worker_ = nullptr;
  uint16_t port_ = 0;
  std::thread thread_;
};

// An echo handler: kEcho -> kEchoReply with the same bytes; kDescribe ->
// kDescribeReply with the endpoint description.
inline void InstallEcho(Worker& w) {
  Worker* self = &w;
  w.SetHandler(kEcho, [self](EndpointId from, std::span<const uint8_t> p) {
    Status s = self->Send(from, kEchoReply, p);
    EXPECT_TRUE(s.ok()) << s.ToString();
  });
  w.SetHandler(kDescribe, [self](EndpointId from, std::span<const uint8_t>) {
    auto d = self->DescribeEndpoint(from);
    std::string text = d.ok() ? *d : d.status().ToString();
    (void)self->Send(from, kDescribeReply,
                     std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()),
                                              text.size()));
  });
}

inline std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 131 + seed * 17) >> 3);
  return v;
}

// A Worker on the calling thread connected to an echo peer.
struct EchoClient {
  std::unique_ptr<Worker> w;
  EndpointId ep = kInvalidEndpoint;
  std::deque<std::vector<uint8_t>> replies;
  std::string peer_description;

  explicit EchoClient(uint16_t port, const WorkerOptions& options = {}) {
    w = MakeWorker(options);
    if (w == nullptr) return;
    w->SetHandler(kEchoReply, [this](EndpointId from, std::span<const uint8_t> p) {
      EXPECT_EQ(from, ep);
      replies.emplace_back(p.begin(), p.end());
    });
    w->SetHandler(kDescribeReply, [this](EndpointId, std::span<const uint8_t> p) {
      peer_description.assign(reinterpret_cast<const char*>(p.data()), p.size());
    });
    auto r = w->Connect("127.0.0.1", port, 10s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) ep = *r;
  }
  bool ok() const { return w != nullptr && ep != kInvalidEndpoint; }

  // Sends one echo request and waits for its reply.
  std::vector<uint8_t> RoundTrip(const std::vector<uint8_t>& payload) {
    Status s = w->Send(ep, kEcho, payload);
    EXPECT_TRUE(s.ok()) << s.ToString();
    s = w->RunUntil([this] { return !replies.empty(); }, 20s);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (replies.empty()) return {};
    auto out = std::move(replies.front());
    replies.pop_front();
    return out;
  }

  // The peer's description of its endpoint to us (ucp_ep_print_info).
  std::string PeerDescription() {
    peer_description.clear();
    EXPECT_TRUE(w->Send(ep, kDescribe, std::span<const uint8_t>()).ok());
    EXPECT_TRUE(w->RunUntil([this] { return !peer_description.empty(); }, 10s).ok());
    return peer_description;
  }
};

// Runs `body` in a forked child with `env` added to its environment (so
// that UCX reads it when the child creates its Workers); returns true if the
// child ran no failing gtest assertion and exited within `timeout`.
inline bool RunInChild(const std::vector<std::string>& env, const std::function<void()>& body,
                       std::chrono::seconds timeout = 60s) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (const auto& kv : env) {
      size_t eq = kv.find('=');
      setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    body();
    std::fflush(nullptr);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  if (pid < 0) return false;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  bool exited = true;
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    exited = poll(&p, 1, static_cast<int>(timeout.count() * 1000)) > 0;
    close(pidfd);
  }
  if (!exited) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  return exited && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// net_peer in a child process.  Modes: "echo", "rma" (see net_peer.cc).
class PeerProcess {
 public:
  PeerProcess(const std::string& mode, std::vector<std::string> env = {}) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(3);
      close(fds[0]);
      int wfd = dup(fds[1]);  // without O_CLOEXEC
      for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
      std::string fd_text = std::to_string(wfd);
      execl(PULSE_NET_PEER, PULSE_NET_PEER, mode.c_str(), fd_text.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    rfd_ = fds[0];
    uint16_t port = 0;
    if (pid_ > 0 && ReadExact(&port, sizeof(port), 20s)) port_ = port;
  }
  ~PeerProcess() {
    if (rfd_ >= 0) close(rfd_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  void Signal(int sig) { kill(pid_, sig); }

  // Waits for the child to exit (pidfd + poll); returns its wait status or
  // -1 on timeout.
  int Wait(std::chrono::milliseconds timeout) {
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      int rc = poll(&p, 1, static_cast<int>(timeout.count()));
      close(pidfd);
      if (rc <= 0) return -1;
    }
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_) return -1;
    reaped_ = true;
    return status;
  }

 private:
  bool ReadExact(void* buf, size_t n, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    auto* out = static_cast<uint8_t*>(buf);
    while (n > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{rfd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      ssize_t r = read(rfd_, out, n);
      if (r <= 0) return false;
      out += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }

  pid_t pid_ = -1;
  int rfd_ = -1;
  uint16_t port_ = 0;
  bool reaped_ = false;
};

}  // namespace pulse::net::testing
