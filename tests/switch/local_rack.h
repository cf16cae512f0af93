// Test harness for the node processes: real `pulse switch` and `pulse
// memnode` processes (build/bin/pulse, PULSE_BINARY), and a CPU node played
// by the test itself with a net::Worker on the test thread.
//
// Every wait has a deadline and watches a condition (a log line, a reply, a
// counter, a process exit); children get SIGKILL when the harness goes away
// (and when the test process dies: PR_SET_PDEATHSIG), and their pools'
// shared-memory objects are unlinked.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pulse/cluster.h"
#include "pulse/net.h"
#include "pulse/protocol.h"

namespace pulse::testing {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// UCX reads these when a Worker is created; children inherit them.
inline void SetUcxTestEnvironment() {
  setenv("UCX_POSIX_ERROR_HANDLING", "y", 1);
  setenv("UCX_SYSV_ERROR_HANDLING", "y", 1);
}

// A random number for ports and names, different in every process.
inline uint32_t RandomNumber() {
  static std::mt19937 rng(std::random_device{}() ^ static_cast<uint32_t>(getpid()));
  return rng();
}

// One child process of build/bin/pulse; its stderr goes to a temporary
// file (Log()).
class NodeProcess {
 public:
  explicit NodeProcess(const std::vector<std::string>& args) {
    char path[] = "/tmp/pulse-node-test-XXXXXX";
    int log_fd = mkstemp(path);
    log_path_ = path;
    std::vector<std::string> argv_storage = {PULSE_BINARY};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(3);
      int null_fd = open("/dev/null", O_RDWR);
      dup2(null_fd, STDIN_FILENO);
      dup2(null_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(log_fd);
  }
  ~NodeProcess() {
    Kill();
    unlink(log_path_.c_str());
  }
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig) {
    if (!reaped_) kill(pid_, sig);
  }
  void Kill() {
    if (pid_ <= 0 || reaped_) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    status_ = status;
  }
  // Waits for the process to exit; returns its wait status, or -1 if it is
  // still running after `timeout`.
  int Wait(Clock::duration timeout) {
    if (reaped_) return status_;
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      int rc = poll(&p, 1, static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
      close(pidfd);
      if (rc <= 0) return -1;
    }
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_) return -1;
    reaped_ = true;
    status_ = status;
    return status;
  }
  bool Exited() { return Wait(0ms) != -1; }
  // 0..255 for a normal exit, -1 otherwise.
  static int ExitCode(int status) { return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

  std::string Log() const {
    std::ifstream in(log_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Waits until the log contains `text` (true) or the process exited or the
  // deadline passed (false).
  bool WaitForLog(const std::string& text, Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (Log().find(text) != std::string::npos) return true;
      if (Exited() || Clock::now() >= deadline) return Log().find(text) != std::string::npos;
      std::this_thread::sleep_for(5ms);  // a poll interval, not a guess
    }
  }
  // utime + stime in seconds, from /proc/<pid>/stat.
  double CpuSeconds() const {
    std::ifstream in(fmt::format("/proc/{}/stat", pid_));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close_paren = text.rfind(')');
    if (close_paren == std::string::npos) return -1;
    std::istringstream fields(text.substr(close_paren + 2));
    std::string f;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; fields >> f; ++i) {  // field 3 is the state
      if (i == 14) utime = std::stoull(f);
      if (i == 15) {
        stime = std::stoull(f);
        break;
      }
    }
    return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = -1;
  std::string log_path_;
};

// The CPU node, played by the test on its own thread.
class TestCpuNode {
 public:
  TestCpuNode() {
    SetUcxTestEnvironment();
    net::WorkerOptions options;
    options.name = "test-cpu";
    auto w = net::Worker::Create(options);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    if (!w.ok()) return;
    worker_ = std::move(w).value();
    worker_->SetHandler(kAmControlReply, [this](net::EndpointId, std::span<const uint8_t> p) {
      json reply = json::parse(p.begin(), p.end(), nullptr, false);
      if (reply.is_object() && reply.contains("seq") && reply["seq"].is_number_unsigned())
        replies_[reply["seq"].get<uint64_t>()] = reply;
    });
    worker_->SetHandler(kAmTraversal, [this](net::EndpointId, std::span<const uint8_t> p) {
      auto m = DecodeMessage(p, 1 << 20);
      EXPECT_TRUE(m.ok()) << m.status().ToString();
      if (m.ok()) responses_.emplace(m->request_id, std::move(m).value());
    });
  }

  bool ok() const { return worker_ != nullptr; }
  net::Worker& worker() { return *worker_; }

  Result<net::EndpointId> Connect(const std::string& address, Clock::duration timeout = 10s) {
    const size_t colon = address.rfind(':');
    return worker_->Connect(address.substr(0, colon), static_cast<uint16_t>(std::stoi(address.substr(colon + 1))),
                            timeout);
  }

  // Sends a control request and waits for the answer (the whole reply, "ok"
  // true or false).  A null json on timeout.
  json Call(net::EndpointId ep, json request, Clock::duration timeout = 10s) {
    const uint64_t seq = next_seq_++;
    request["seq"] = seq;
    std::string text = request.dump();
    Status s = worker_->Send(ep, kAmControl,
                             std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    if (!s.ok()) return json();
    (void)worker_->RunUntil([&] { return replies_.count(seq) != 0; }, timeout);
    auto it = replies_.find(seq);
    if (it == replies_.end()) return json();
    json reply = std::move(it->second);
    replies_.erase(it);
    return reply;
  }

  Status SendTraversal(net::EndpointId ep, const TraversalMessage& m) {
    return worker_->Send(ep, kAmTraversal, EncodeMessage(m));
  }
  Status SendRaw(net::EndpointId ep, std::vector<uint8_t> bytes) {
    return worker_->Send(ep, kAmTraversal, std::move(bytes));
  }
  // The response to `request_id`, or an error after `timeout`.
  Result<TraversalMessage> WaitResponse(uint64_t request_id, Clock::duration timeout = 10s) {
    Status s = worker_->RunUntil([&] { return responses_.count(request_id) != 0; }, timeout);
    if (!s.ok()) return Status::Timeout(fmt::format("no response to request {:#x}", request_id));
    TraversalMessage m = std::move(responses_[request_id]);
    responses_.erase(request_id);
    return m;
  }
  // Lets the worker run (handlers, keepalive) for a moment.
  void Pump(Clock::duration d) { (void)worker_->RunUntil([] { return false; }, d); }

 private:
  std::unique_ptr<net::Worker> worker_;
  uint64_t next_seq_ = 1;
  std::map<uint64_t, json> replies_;
  std::map<uint64_t, TraversalMessage> responses_;
};

// A memory node's view from the CPU node: its hello answer and a key for
// one-sided access.
struct MemNodeView {
  uint32_t node = 0;
  std::string address;
  net::EndpointId ep = net::kInvalidEndpoint;
  uint64_t base = 0;
  uint64_t size = 0;
  uint64_t remote_base = 0;
  net::RemoteKey rkey;

  uint64_t Remote(uint64_t far) const { return remote_base + (far - base); }
};

inline std::vector<uint8_t> HexDecode(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// A switch and memory nodes, each a process, plus the test's CPU node
// connected to all of them.
class LocalRack {
 public:
  LocalRack() : tag_(RandomNumber() % 1000000) {}
  ~LocalRack() {
    for (auto& [id, v] : views_) v.rkey = net::RemoteKey();
    cpu_.reset();
    for (auto& [id, p] : memnodes_) p.reset();
    switch_.reset();
    for (const auto& name : shm_names_) shm_unlink(name.c_str());
  }

  // Starts the switch on a free port (random, retried if taken), with
  // `extra` flags.  Returns false (and fails the test) if it cannot.
  bool StartSwitch(const std::vector<std::string>& extra = {}) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      const uint16_t port = static_cast<uint16_t>(15000 + RandomNumber() % 17000);  // below the ephemeral range
      std::vector<std::string> args = {"switch", "--listen", fmt::format("127.0.0.1:{}", port)};
      args.insert(args.end(), extra.begin(), extra.end());
      switch_ = std::make_unique<NodeProcess>(args);
      if (switch_->WaitForLog(fmt::format("listening on 127.0.0.1:{}", port), 20s)) {
        switch_port_ = port;
        return true;
      }
      if (!switch_->Exited()) {
        ADD_FAILURE() << "the switch did not start in time:\n" << switch_->Log();
        return false;
      }
      // Most likely the port was taken: try another.
    }
    ADD_FAILURE() << "could not start a switch:\n" << (switch_ ? switch_->Log() : "");
    return false;
  }

  std::string shm_name(uint32_t node) const { return fmt::format("/pulse-test-{}-{}-{}", getpid(), tag_, node); }

  // Starts memory node `node` against the switch (port 0: it registers its
  // real address).
  void StartMemNode(uint32_t node, uint64_t pool_mib = 8, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"memnode",      "--node",       std::to_string(node),
                                     "--listen",     "127.0.0.1:0",  "--switch",
                                     fmt::format("127.0.0.1:{}", switch_port_), "--pool-mib",
                                     std::to_string(pool_mib),       "--shm-name", shm_name(node)};
    args.insert(args.end(), extra.begin(), extra.end());
    shm_names_.push_back(shm_name(node));
    memnodes_[node] = std::make_unique<NodeProcess>(args);
  }

  // Starts the switch and memory nodes 0..n-1 and joins as a CPU node: hello
  // to the switch (until every node is registered and alive), then hello to
  // each memory node.
  bool Start(int n, uint64_t pool_mib = 8) {
    if (!StartSwitch()) return false;
    for (int i = 0; i < n; ++i) StartMemNode(static_cast<uint32_t>(i), pool_mib);
    return Join(n);
  }

  // Connects the CPU node (once) and waits until `n` memory nodes are alive
  // at the switch; then connects to each of them.
  bool Join(int n, Clock::duration timeout = 20s) {
    if (cpu_ == nullptr) {
      cpu_ = std::make_unique<TestCpuNode>();
      if (!cpu_->ok()) return false;
      auto ep = cpu_->Connect(fmt::format("127.0.0.1:{}", switch_port_));
      if (!ep.ok()) {
        ADD_FAILURE() << "connecting to the switch: " << ep.status().ToString();
        return false;
      }
      switch_ep_ = *ep;
    }
    const auto deadline = Clock::now() + timeout;
    json hello;
    for (;;) {
      hello = cpu_->Call(switch_ep_, {{"op", "hello"}});
      int alive = 0;
      if (hello.value("ok", false))
        for (const auto& m : hello["memnodes"]) alive += m.value("alive", false);
      if (alive >= n) break;
      for (auto& [id, p] : memnodes_) {
        if (p->Exited()) {
          ADD_FAILURE() << "memory node " << id << " exited:\n" << p->Log();
          return false;
        }
      }
      if (Clock::now() >= deadline) {
        ADD_FAILURE() << "memory nodes did not register in time; last hello: " << hello.dump();
        return false;
      }
      cpu_->Pump(10ms);
    }
    cpu_node_ = hello["cpu_node"].get<uint32_t>();
    for (const auto& m : hello["memnodes"]) {
      if (!m.value("alive", false)) continue;
      const uint32_t id = m["node"].get<uint32_t>();
      if (views_.count(id) && views_[id].address == m["address"].get<std::string>()) continue;
      if (!ConnectMemNode(id, m["address"].get<std::string>())) return false;
    }
    return true;
  }

  bool ConnectMemNode(uint32_t id, const std::string& address) {
    MemNodeView v;
    v.node = id;
    v.address = address;
    auto ep = cpu_->Connect(address);
    if (!ep.ok()) {
      ADD_FAILURE() << "connecting to memory node " << id << ": " << ep.status().ToString();
      return false;
    }
    v.ep = *ep;
    json h = cpu_->Call(v.ep, {{"op", "hello"}});
    if (!h.value("ok", false)) {
      ADD_FAILURE() << "hello to memory node " << id << ": " << h.dump();
      return false;
    }
    v.base = h["base"].get<uint64_t>();
    v.size = h["size"].get<uint64_t>();
    v.remote_base = h["remote_base"].get<uint64_t>();
    auto key = cpu_->worker().ImportRkey(v.ep, HexDecode(h["rkey"].get<std::string>()));
    if (!key.ok()) {
      ADD_FAILURE() << "rkey of memory node " << id << ": " << key.status().ToString();
      return false;
    }
    v.rkey = std::move(key).value();
    views_[id] = std::move(v);
    return true;
  }

  // Allocates on a memory node; the reply (ok or not).
  json Alloc(uint32_t node, uint64_t bytes, uint32_t tenant = 1, const std::string& perms = "rw") {
    return cpu_->Call(views_.at(node).ep, {{"op", "alloc"}, {"bytes", bytes}, {"tenant", tenant}, {"perms", perms}});
  }
  Status Put(uint32_t node, uint64_t far, const void* data, size_t n) {
    MemNodeView& v = views_.at(node);
    return cpu_->worker().Put(v.rkey, v.Remote(far), data, n, 10s);
  }
  Status Get(uint32_t node, uint64_t far, void* data, size_t n) {
    MemNodeView& v = views_.at(node);
    return cpu_->worker().Get(v.rkey, v.Remote(far), data, n, 10s);
  }
  json SwitchStats() { return cpu_->Call(switch_ep_, {{"op", "stats"}}); }
  json MemNodeStats(uint32_t node) { return cpu_->Call(views_.at(node).ep, {{"op", "stats"}}); }

  // Waits until the switch's stats satisfy `pred`; returns the last stats.
  template <typename Pred>
  json WaitForSwitchStats(Pred pred, Clock::duration timeout = 10s) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      json s = SwitchStats();
      if ((s.value("ok", false) && pred(s["counters"])) || Clock::now() >= deadline) return s;
      cpu_->Pump(10ms);
    }
  }

  TestCpuNode& cpu() { return *cpu_; }
  NodeProcess& switch_process() { return *switch_; }
  NodeProcess& memnode(uint32_t node) { return *memnodes_.at(node); }
  MemNodeView& view(uint32_t node) { return views_.at(node); }
  void ForgetMemNode(uint32_t node) {
    views_.erase(node);
  }
  uint16_t switch_port() const { return switch_port_; }
  net::EndpointId switch_ep() const { return switch_ep_; }
  uint32_t cpu_node() const { return cpu_node_; }

 private:
  uint32_t tag_;
  std::unique_ptr<NodeProcess> switch_;
  std::map<uint32_t, std::unique_ptr<NodeProcess>> memnodes_;
  std::vector<std::string> shm_names_;
  std::unique_ptr<TestCpuNode> cpu_;
  std::map<uint32_t, MemNodeView> views_;
  uint16_t switch_port_ = 0;
  net::EndpointId switch_ep_ = net::kInvalidEndpoint;
  uint32_t cpu_node_ = 0;
};

}  // namespace pulse::testing
