// Poll-window benchmark: AM ping-pong against forked server processes.
#include "bench/net_bench.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pulse/net.h"

namespace pulse::net {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::ordered_json;

constexpr uint16_t kPing = 1;
constexpr uint16_t kPong = 2;
constexpr uint16_t kMark = 3;
constexpr uint16_t kMarkReply = 4;
constexpr uint16_t kQuit = 5;

struct Config {
  PollMode mode = PollMode::kAdaptive;
  uint32_t window_us = 0;
  std::string label;
};

// What the server reports at each mark.
struct ServerSnap {
  uint64_t cpu_us = 0;
  uint64_t sleeps = 0;
  uint64_t wakeups = 0;
  uint64_t poll_iterations = 0;
};

uint64_t CpuMicros(int who) {
  rusage ru{};
  getrusage(who, &ru);
  auto us = [](const timeval& tv) {
    return static_cast<uint64_t>(tv.tv_sec) * 1000000 + static_cast<uint64_t>(tv.tv_usec);
  };
  return us(ru.ru_utime) + us(ru.ru_stime);
}

WorkerOptions MakeOptions(const Config& c, const NetBenchOptions& o, const char* name) {
  WorkerOptions w;
  w.poll_mode = c.mode;
  w.poll_window_us = c.window_us;
  w.yield_while_polling = o.yield_while_polling;
  w.transports = o.transports;
  w.ucx_config = o.ucx_config;
  w.name = name;
  w.insecure = true;  // both ends in this process, on loopback: measures the transport, not the handshake
  return w;
}

bool WaitReadable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, static_cast<int>(timeout.count())) > 0;
}

// The server process: waits for 'g' on go_fd, serves one configuration,
// exits.  Never returns.
[[noreturn]] void ServerMain(const Config& c, const NetBenchOptions& o, int go_fd, int port_fd) {
  char go = 0;
  if (!WaitReadable(go_fd, 30min) || read(go_fd, &go, 1) != 1 || go != 'g') _exit(0);
  auto created = Worker::Create(MakeOptions(c, o, "bench-server"));
  if (!created.ok()) {
    std::fprintf(stderr, "bench server: %s\n", created.status().ToString().c_str());
    _exit(2);
  }
  std::unique_ptr<Worker> w = std::move(created).value();
  bool quit = false;
  w->SetHandler(kPing, [&](EndpointId from, std::span<const uint8_t> p) {
    (void)w->Send(from, kPong, p);
  });
  w->SetHandler(kMark, [&](EndpointId from, std::span<const uint8_t>) {
    const Counters& k = w->counters();
    ServerSnap s{CpuMicros(RUSAGE_SELF), k.sleeps, k.wakeups, k.poll_iterations};
    (void)w->Send(from, kMarkReply,
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&s), sizeof(s)));
  });
  w->SetHandler(kQuit, [&](EndpointId, std::span<const uint8_t>) { quit = true; });
  w->SetDisconnectHandler([&](EndpointId, const Status&) { quit = true; });
  auto port = w->Listen("127.0.0.1", 0);
  uint16_t p = port.ok() ? *port : 0;
  if (write(port_fd, &p, sizeof(p)) != static_cast<ssize_t>(sizeof(p)) || p == 0) _exit(2);
  auto end = Clock::now() + 10min;
  while (!quit && Clock::now() < end) (void)w->RunUntil([&] { return quit; }, 1s);
  w.reset();
  _exit(0);
}

struct Server {
  pid_t pid = -1;
  int go_fd = -1;    // parent writes 'g'
  int port_fd = -1;  // parent reads the port
};

void Reap(Server& s) {
  if (s.go_fd >= 0) close(s.go_fd);
  if (s.port_fd >= 0) close(s.port_fd);
  s.go_fd = s.port_fd = -1;
  if (s.pid <= 0) return;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, s.pid, 0));
  bool exited = pidfd < 0;  // no pidfd: fall back to SIGKILL below
  if (pidfd >= 0) {
    exited = WaitReadable(pidfd, 5s);
    close(pidfd);
  }
  if (!exited) kill(s.pid, SIGKILL);
  waitpid(s.pid, nullptr, 0);
  s.pid = -1;
}

struct Stats {
  double median = 0, mean = 0, p99 = 0;
};

Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, static_cast<size_t>(static_cast<double>(v.size()) * 0.99))];
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

double Round3(double x) { return static_cast<double>(static_cast<int64_t>(x * 1000 + 0.5)) / 1000; }

// The client side of one configuration.
class Client {
 public:
  Client(std::unique_ptr<Worker> w, EndpointId ep, size_t payload)
      : w_(std::move(w)), ep_(ep), payload_(payload, 0x42) {
    w_->SetHandler(kPong, [this](EndpointId, std::span<const uint8_t>) { ++pongs_; });
    w_->SetHandler(kMarkReply, [this](EndpointId, std::span<const uint8_t> p) {
      if (p.size() == sizeof(ServerSnap)) std::memcpy(&snap_, p.data(), sizeof(snap_));
      ++marks_;
    });
  }
  Worker& worker() { return *w_; }

  // One round trip; returns its duration in microseconds or a negative value.
  double RoundTrip() {
    uint64_t want = pongs_ + 1;
    auto t0 = Clock::now();
    if (!w_->Send(ep_, kPing, payload_).ok()) return -1;
    if (!w_->RunUntil([&] { return pongs_ >= want; }, 10s).ok()) return -1;
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  bool Mark(ServerSnap* out) {
    uint64_t want = marks_ + 1;
    if (!w_->Send(ep_, kMark, std::span<const uint8_t>()).ok()) return false;
    if (!w_->RunUntil([&] { return marks_ >= want; }, 10s).ok()) return false;
    *out = snap_;
    return true;
  }
  void Quit() {
    (void)w_->Send(ep_, kQuit, std::span<const uint8_t>());
    (void)w_->Close(ep_, 1s);
  }
  void Idle(std::chrono::microseconds d) { (void)w_->RunUntil([] { return false; }, d); }

 private:
  std::unique_ptr<Worker> w_;
  EndpointId ep_;
  std::vector<uint8_t> payload_;
  uint64_t pongs_ = 0;
  uint64_t marks_ = 0;
  ServerSnap snap_;
};

Json PhaseJson(const std::vector<double>& rtts, const ServerSnap& a, const ServerSnap& b,
               uint64_t client_cpu_us) {
  std::vector<double> one_way;
  one_way.reserve(rtts.size());
  for (double r : rtts) one_way.push_back(r / 2);
  Stats s = Summarize(one_way);
  double n = std::max<double>(1, static_cast<double>(rtts.size()));
  Json j;
  j["round_trips"] = rtts.size();
  j["one_way_us"] = {{"median", Round3(s.median)}, {"mean", Round3(s.mean)}, {"p99", Round3(s.p99)}};
  j["server_cpu_us_per_msg"] = Round3(static_cast<double>(b.cpu_us - a.cpu_us) / n);
  j["client_cpu_us_per_msg"] = Round3(static_cast<double>(client_cpu_us) / n);
  j["server_sleeps_per_msg"] = Round3(static_cast<double>(b.sleeps - a.sleeps) / n);
  j["server_polls_per_msg"] = Round3(static_cast<double>(b.poll_iterations - a.poll_iterations) / n);
  return j;
}

// Runs one configuration against its (already forked) server.
Json RunConfig(const Config& c, const NetBenchOptions& o, Server& server, std::string* error) {
  Json j;
  j["label"] = c.label;
  j["mode"] = c.mode == PollMode::kBusy ? "busy" : "adaptive";
  if (c.mode != PollMode::kBusy) j["poll_window_us"] = c.window_us;
  auto fail = [&](const std::string& what) {
    *error = c.label + ": " + what;
    j["error"] = what;
    return j;
  };
  if (write(server.go_fd, "g", 1) != 1) return fail("cannot start the server process");
  uint16_t port = 0;
  if (!WaitReadable(server.port_fd, 20s) ||
      read(server.port_fd, &port, sizeof(port)) != static_cast<ssize_t>(sizeof(port)) ||
      port == 0) {
    return fail("server process did not report a port");
  }
  auto created = Worker::Create(MakeOptions(c, o, "bench-client"));
  if (!created.ok()) return fail(created.status().ToString());
  std::unique_ptr<Worker> w = std::move(created).value();
  auto ep = w->Connect("127.0.0.1", port, 10s);
  if (!ep.ok()) return fail(ep.status().ToString());
  Client client(std::move(w), *ep, o.payload_bytes);

  for (uint32_t i = 0; i < o.warmup; ++i) {
    if (client.RoundTrip() < 0) return fail("warm-up round trip failed");
  }
  ServerSnap s0, s1, s2, s3;
  std::vector<double> rtts;
  rtts.reserve(std::max(o.iterations, o.paced_iterations));

  if (!client.Mark(&s0)) return fail("mark failed");
  uint64_t cpu0 = CpuMicros(RUSAGE_THREAD);
  for (uint32_t i = 0; i < o.iterations; ++i) {
    double r = client.RoundTrip();
    if (r < 0) return fail("round trip failed");
    rtts.push_back(r);
  }
  uint64_t cpu1 = CpuMicros(RUSAGE_THREAD);
  if (!client.Mark(&s1)) return fail("mark failed");
  j["back_to_back"] = PhaseJson(rtts, s0, s1, cpu1 - cpu0);

  rtts.clear();
  uint64_t cpu2 = CpuMicros(RUSAGE_THREAD);
  for (uint32_t i = 0; i < o.paced_iterations; ++i) {
    client.Idle(std::chrono::microseconds(o.paced_gap_us));
    double r = client.RoundTrip();
    if (r < 0) return fail("paced round trip failed");
    rtts.push_back(r);
  }
  uint64_t cpu3 = CpuMicros(RUSAGE_THREAD);
  if (!client.Mark(&s2)) return fail("mark failed");
  if (o.paced_iterations > 0) j["paced"] = PhaseJson(rtts, s1, s2, cpu3 - cpu2);

  client.Idle(std::chrono::milliseconds(o.idle_ms));
  if (!client.Mark(&s3)) return fail("mark failed");
  double idle_us = static_cast<double>(o.idle_ms) * 1000.0;
  j["idle"] = {{"ms", o.idle_ms},
               {"server_cpu_percent",
                Round3(idle_us > 0 ? 100.0 * static_cast<double>(s3.cpu_us - s2.cpu_us) / idle_us
                                   : 0)}};
  client.Quit();
  return j;
}

}  // namespace

int RunNetBench(const NetBenchOptions& o) {
  std::vector<Config> configs;
  for (int wnd : o.windows_us) {
    Config c;
    if (wnd < 0) {
      c.mode = PollMode::kBusy;
      c.label = "busy";
    } else {
      c.window_us = static_cast<uint32_t>(wnd);
      c.label = wnd == 0 ? "sleep (window 0)" : "adaptive " + std::to_string(wnd) + " us";
    }
    configs.push_back(c);
  }

  // Fork every server before this process touches UCX.
  std::vector<Server> servers(configs.size());
  std::vector<int> parent_fds;
  for (size_t i = 0; i < configs.size(); ++i) {
    int go[2], port[2];
    if (pipe(go) != 0 || pipe(port) != 0) {
      std::fprintf(stderr, "bench net: pipe: %s\n", std::strerror(errno));
      for (auto& s : servers) Reap(s);
      return 1;
    }
    fflush(nullptr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0);
      for (int fd : parent_fds) close(fd);
      close(go[1]);
      close(port[0]);
      ServerMain(configs[i], o, go[0], port[1]);
    }
    close(go[0]);
    close(port[1]);
    servers[i] = Server{pid, go[1], port[0]};
    parent_fds.push_back(go[1]);
    parent_fds.push_back(port[0]);
    if (pid < 0) {
      std::fprintf(stderr, "bench net: fork: %s\n", std::strerror(errno));
      for (auto& s : servers) Reap(s);
      return 1;
    }
  }

  Json out;
  out["benchmark"] = "net_pingpong";
  out["payload_bytes"] = o.payload_bytes;
  out["iterations"] = o.iterations;
  out["paced_iterations"] = o.paced_iterations;
  out["paced_gap_us"] = o.paced_gap_us;
  out["transports"] = o.transports.empty() ? "default" : o.transports;
  out["yield_while_polling"] = o.yield_while_polling;
  Json results = Json::array();
  int rc = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    std::string error;
    results.push_back(RunConfig(configs[i], o, servers[i], &error));
    Reap(servers[i]);
    if (!error.empty()) {
      std::fprintf(stderr, "bench net: %s\n", error.c_str());
      rc = 1;
    }
  }
  out["results"] = results;

  // Suggested window: the lowest back-to-back + paced median one-way
  // latency among the adaptive windows; a smaller window within 10% of it
  // is preferred (less CPU per isolated message).
  double best = 1e300;
  auto score = [](const Json& r) {
    double s = r["back_to_back"]["one_way_us"]["median"].get<double>();
    if (r.contains("paced")) s += r["paced"]["one_way_us"]["median"].get<double>();
    return s;
  };
  for (const auto& r : results) {
    if (r.contains("back_to_back") && r["mode"] == "adaptive") best = std::min(best, score(r));
  }
  int64_t suggested = -1;
  for (const auto& r : results) {
    if (r.contains("back_to_back") && r["mode"] == "adaptive" && score(r) <= best * 1.10) {
      int64_t wnd = r["poll_window_us"].get<int64_t>();
      if (suggested < 0 || wnd < suggested) suggested = wnd;
    }
  }
  if (suggested >= 0) {
    out["suggested_poll_window_us"] = suggested;
    out["suggestion_rule"] =
        "smallest adaptive window whose back-to-back + paced median one-way latency is within "
        "10% of the best adaptive window";
  }
  std::fprintf(o.out, "%s\n", out.dump(2).c_str());
  std::fflush(o.out);
  return rc;
}

}  // namespace pulse::net
