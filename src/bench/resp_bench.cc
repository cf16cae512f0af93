// `pulse bench resp` (src/bench/resp_bench.h): the servers as child
// processes, redis-benchmark as the client.
#include "bench/resp_bench.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "cluster/process.h"

namespace pulse::bench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// An executable on PATH (or in /usr/bin, where Debian puts Redis).
Result<std::string> FindTool(const std::string& name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/bin:/usr/sbin";
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return Status::NotFound(fmt::format("{} is not installed (scripts/setup.sh installs it)", name));
}

uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// A server child: stopped (SIGTERM, then SIGKILL) when this goes away.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  ~Child() {
    if (!cluster::IsRunning(id_)) return;
    cluster::SignalProcess(id_, SIGTERM);
    for (auto end = Clock::now() + std::chrono::seconds(5); Clock::now() < end && cluster::IsRunning(id_);)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cluster::SignalProcess(id_, SIGKILL);
    cluster::ReapChild(id_);
  }
  Status Start(std::vector<std::string> argv, const std::string& log) {
    log_ = log;
    cluster::SpawnOptions so;
    so.argv = std::move(argv);
    so.log_path = log;
    so.die_with_parent = true;
    PULSE_ASSIGN_OR_RETURN(id_, cluster::Spawn(so));
    return Status::Ok();
  }
  bool running() const { return cluster::IsRunning(id_); }
  const std::string& log() const { return log_; }

 private:
  cluster::ProcessId id_;
  std::string log_;
};

// A TCP connection to 127.0.0.1:port whose reads wait at most `read_timeout_s`;
// -1 if it cannot connect.  The caller closes it.
int ConnectLoopback(uint16_t port, int read_timeout_s) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{read_timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Waits (20 s at most) until a PING on 127.0.0.1:port gets +PONG.
Status WaitForPong(uint16_t port, const Child& child, const std::string& what) {
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < end) {
    if (!child.running())
      return Status::Unavailable(fmt::format("{} exited: {}", what, cluster::TailOfFile(child.log(), 10)));
    const int fd = ConnectLoopback(port, 2);
    bool ok = false;
    if (fd >= 0) {
      static const char kPing[] = "PING\r\n";
      char buf[16] = {};
      ok = ::write(fd, kPing, sizeof kPing - 1) == sizeof kPing - 1 && ::read(fd, buf, sizeof buf) >= 5 &&
           std::string_view(buf, 5) == "+PONG";
    }
    if (fd >= 0) ::close(fd);
    if (ok) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Timeout(fmt::format("{} did not answer PING on port {} within 20 s (log {})", what, port, child.log()));
}

// redis-benchmark --csv: per test {rps, p50_ms, p99_ms, ...}.
Result<json> RunRedisBenchmark(const std::string& tool, uint16_t port, const RespBenchOptions& o, uint32_t pipeline) {
  const std::string cmd =
      fmt::format("timeout 900 {} -h 127.0.0.1 -p {} -t {} -n {} -c {} -r {} -d {} -P {} --csv 2>&1", tool, port,
                  o.tests, o.requests, o.clients, o.keyspace, o.value_bytes, pipeline);
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return Status::IoError("cannot run " + cmd);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int rc = ::pclose(f);
  if (rc != 0 || out.find("rror") != std::string::npos)
    return Status::Internal(fmt::format("{} failed ({}): {}", cmd, rc, out.substr(0, 2000)));
  json tests = json::object();
  std::stringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f;
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) {
      if (cell.size() >= 2 && cell.front() == '"') cell = cell.substr(1, cell.size() - 2);
      f.push_back(cell);
    }
    if (f.size() < 8 || f[0] == "test") continue;
    tests[f[0]] = {{"rps", std::atof(f[1].c_str())}, {"avg_ms", std::atof(f[2].c_str())},
                   {"p50_ms", std::atof(f[4].c_str())}, {"p99_ms", std::atof(f[6].c_str())},
                   {"max_ms", std::atof(f[7].c_str())}};
  }
  if (tests.empty()) return Status::Internal(fmt::format("{}: no results in: {}", cmd, out.substr(0, 2000)));
  return tests;
}

// The numeric `pulse_*` fields of the INFO reply of the server on port
// (the batch phase timers and counters of docs/resp.md); empty if it does
// not answer.
std::map<std::string, uint64_t> PulseInfo(uint16_t port) {
  std::map<std::string, uint64_t> fields;
  const int fd = ConnectLoopback(port, 5);
  std::string reply;
  if (fd >= 0 && ::write(fd, "INFO\r\n", 6) == 6) {
    // A bulk string: "$<len>\r\n" then len bytes and "\r\n".
    char buf[8192];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
      const size_t eol = reply.find("\r\n");
      if (eol != std::string::npos && reply[0] == '$' &&
          reply.size() >= eol + 2 + std::strtoull(reply.c_str() + 1, nullptr, 10) + 2)
        break;
    }
  }
  if (fd >= 0) ::close(fd);
  std::stringstream lines(reply);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("pulse_", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon + 1 >= line.size() || !std::isdigit(line[colon + 1])) continue;
    fields[line.substr(0, colon)] = std::strtoull(line.c_str() + colon + 1, nullptr, 10);
  }
  return fields;
}

}  // namespace

Result<json> RunRespBench(const RespBenchOptions& o) {
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  PULSE_ASSIGN_OR_RETURN(std::string benchmark, FindTool("redis-benchmark"));
  PULSE_ASSIGN_OR_RETURN(std::string redis, FindTool("redis-server"));
  const std::string binary = o.binary.empty() ? std::filesystem::read_symlink("/proc/self/exe").string() : o.binary;
  const std::string work = fmt::format("/tmp/pulse-bench-resp-{}", getpid());
  std::filesystem::create_directories(work);

  BenchClusterOptions co;
  co.name = "bench-resp";
  co.binary = o.binary;
  co.run_dir = o.run_dir;
  co.ucx_tls = o.ucx_tls;
  co.progress = o.progress;
  cluster::ClusterGuard guard;
  PULSE_ASSIGN_OR_RETURN(std::string switch_address, StartOrJoinBenchCluster(co, o.switch_address, &guard));

  Child kv, rs;
  const std::string port_file = work + "/kv.port";
  PULSE_RETURN_IF_ERROR(kv.Start({binary, "kv", "serve", "--switch", switch_address, "--listen", "127.0.0.1:0",
                                  "--root", work + "/resp.root", "--port-file", port_file},
                                 work + "/kv.log"));
  uint16_t kv_port = 0;
  for (auto end = Clock::now() + std::chrono::seconds(30); kv_port == 0;) {
    if (auto p = cluster::ReadPortFile(port_file); p.ok()) kv_port = *p;
    else if (Clock::now() > end || !kv.running())
      return Status::Unavailable(fmt::format("pulse kv serve did not start: {}", cluster::TailOfFile(kv.log(), 10)));
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  PULSE_RETURN_IF_ERROR(WaitForPong(kv_port, kv, "pulse kv serve"));
  const uint16_t redis_port = FreePort();
  PULSE_RETURN_IF_ERROR(rs.Start({redis, "--port", std::to_string(redis_port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", work},
                                 work + "/redis.log"));
  PULSE_RETURN_IF_ERROR(WaitForPong(redis_port, rs, "redis-server"));

  json result = {{"requests", o.requests}, {"clients", o.clients}, {"keyspace", o.keyspace},
                 {"value_bytes", o.value_bytes}, {"tests", o.tests}};
  json runs = json::array();
  for (uint32_t pipeline : o.pipelines) {
    json run = {{"pipeline", pipeline}};
    for (const auto& [name, port] : {std::pair<std::string, uint16_t>{"redis", redis_port}, {"pulse", kv_port}}) {
      say(fmt::format("{} with -P {}", name, pipeline));
      const auto before = name == "pulse" ? PulseInfo(port) : std::map<std::string, uint64_t>{};
      PULSE_ASSIGN_OR_RETURN(run[name], RunRedisBenchmark(benchmark, port, o, pipeline));
      if (name != "pulse") continue;
      // Where the server's time went in this run's tests (INFO before/after).
      json server = json::object();
      for (const auto& [field, value] : PulseInfo(port)) {
        const auto b = before.find(field);
        server[field.substr(6)] = value - (b == before.end() ? 0 : std::min(b->second, value));
      }
      run["pulse_server"] = server;
    }
    json ratio = json::object();
    for (auto& [test, figures] : run["pulse"].items())
      if (run["redis"].contains(test) && run["redis"][test]["rps"].get<double>() > 0)
        ratio[test] = figures["rps"].get<double>() / run["redis"][test]["rps"].get<double>();
    run["pulse_over_redis_rps"] = ratio;
    runs.push_back(run);
  }
  result["runs"] = runs;
  result["ycsb"] =
      "not run: Debian 12 packages a JDK and Maven but not YCSB or Jedis, so YCSB's Redis binding "
      "(site.ycsb:redis-binding) could only come from Maven Central, which this project's dependency rule "
      "(Debian packages and PyPI) excludes; and from here the binding's POM is not found there (docs/resp.md)";
  std::error_code ec;
  std::filesystem::remove_all(work, ec);
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return result;
}

}  // namespace pulse::bench
