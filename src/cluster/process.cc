#include "cluster/process.h"

#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace pulse::cluster {

namespace {

// The fields of /proc/<pid>/stat from field 3 (state) on: the command name
// before them may hold spaces and parentheses, so they start after its last
// ')'.  Empty if the file cannot be read or is malformed.
std::vector<std::string> ProcStatFields(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(in, text)) return {};
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return {};
  std::vector<std::string> fields;
  std::istringstream rest(text.substr(paren + 2));
  for (std::string f; rest >> f;) fields.push_back(std::move(f));
  return fields;
}

// Field n (1-based, as proc(5) numbers them) of ProcStatFields.
constexpr size_t kStatState = 3 - 3, kStatUtime = 14 - 3, kStatStime = 15 - 3, kStatStartTime = 22 - 3;

// State and starttime of pid.
bool ReadProcStat(pid_t pid, char* state, uint64_t* start_ticks) {
  const std::vector<std::string> fields = ProcStatFields(pid);
  if (fields.size() <= kStatStartTime) return false;
  *state = fields[kStatState].empty() ? '?' : fields[kStatState][0];
  *start_ticks = std::strtoull(fields[kStatStartTime].c_str(), nullptr, 10);
  return true;
}

std::string DescribeWait(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "ended";
}

// Wait statuses of children reaped by IsRunning or WaitForExit, for a later
// ReapChild or WaitForExit.  An entry goes when Spawn gets the pid again.
std::map<pid_t, int>& ReapedChildren() {
  static std::map<pid_t, int> reaped;
  return reaped;
}

// Reaps the child if it has ended: true (and *status) if it was reaped now
// or before.
bool TryReap(pid_t pid, int* status) {
  auto& reaped = ReapedChildren();
  if (auto it = reaped.find(pid); it != reaped.end()) {
    *status = it->second;
    return true;
  }
  int s = 0;
  pid_t r;
  do {
    r = waitpid(pid, &s, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid) return false;
  reaped[pid] = s;
  *status = s;
  return true;
}

}  // namespace

uint64_t StartTicks(pid_t pid) {
  char state = 0;
  uint64_t ticks = 0;
  if (!ReadProcStat(pid, &state, &ticks) || state == 'Z' || state == 'X') return 0;
  return ticks;
}

Result<ProcessId> Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return Status::InvalidArgument("spawn: empty command");
  // Everything the child needs is prepared before fork: after fork in a
  // multi-threaded process only async-signal-safe calls are allowed.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : options.env) replaced = replaced || k == name;
    if (!replaced) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : options.env) {
    // Later entries win over earlier ones with the same name.
    // (A lambda may not capture a structured binding before clang 16.)
    const std::string prefix = k + "=";
    std::erase_if(env_strings, [&](const std::string& s) { return s.compare(0, prefix.size(), prefix) == 0; });
    env_strings.push_back(k + "=" + v);
  }
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  const int log_fd = open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::IoError(fmt::format("cannot open log '{}': {}", options.log_path, strerror(errno)));
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int err_pipe[2];
  if (null_fd < 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return Status::IoError(fmt::format("spawn {}: {}", args[0], strerror(e)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(log_fd);
    close(null_fd);
    close(err_pipe[0]);
    close(err_pipe[1]);
    return Status::IoError(fmt::format("fork for {}: {}", args[0], strerror(e)));
  }
  if (pid == 0) {
    // The child: async-signal-safe calls only, until execve.
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);  // the parent may block signals
    signal(SIGPIPE, SIG_DFL);
    setsid();
    if (options.die_with_parent) {
      prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
      if (getppid() != parent) _exit(127);
    }
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    // Whatever else this process had open (UCX sockets, event fds) closes at exec.
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    execve(argv[0], argv.data(), envp.data());
    const int e = errno;
    ssize_t ignored = write(err_pipe[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  close(log_fd);
  close(null_fd);
  close(err_pipe[1]);
  ProcessId id{pid, 0};
  // The pipe closes at exec (success) or carries errno (failure).
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(err_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    waitpid(pid, nullptr, 0);
    return Status::IoError(fmt::format("cannot run '{}': {}", args[0], strerror(child_errno)));
  }
  ReapedChildren().erase(pid);  // a pid of an earlier child, reused
  id.start_ticks = StartTicks(pid);
  return id;
}

std::string ReapChild(const ProcessId& p) {
  int status = 0;
  return p.pid > 0 && TryReap(p.pid, &status) ? DescribeWait(status) : "";
}

bool IsRunning(const ProcessId& p) {
  if (p.pid <= 0) return false;
  int status = 0;
  if (TryReap(p.pid, &status)) return false;
  // A child of ours that runs, or someone else's process.
  const uint64_t ticks = StartTicks(p.pid);
  return ticks != 0 && (p.start_ticks == 0 || ticks == p.start_ticks);
}

bool SignalProcess(const ProcessId& p, int sig) {
  if (!IsRunning(p)) return false;
  return kill(p.pid, sig) == 0;
}

std::optional<int> WaitForExit(const ProcessId& p, std::chrono::milliseconds timeout) {
  if (!IsRunning(p)) {
    int status = 0;
    return TryReap(p.pid, &status) ? status : 0;
  }
  // A pidfd turns readable when the process ends: poll sleeps until then.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, p.pid, 0));
  if (pidfd < 0) return IsRunning(p) ? std::nullopt : WaitForExit(p, std::chrono::milliseconds(0));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pfd{pidfd, POLLIN, 0};
    const int rc = poll(&pfd, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (rc < 0 && errno == EINTR) continue;
    close(pidfd);
    if (rc <= 0) return std::nullopt;
    break;
  }
  int status = 0;
  if (TryReap(p.pid, &status)) return status;
  // Readable but not reapable: not a child of ours (or reaped elsewhere).
  if (waitpid(p.pid, &status, 0) == p.pid) {
    ReapedChildren()[p.pid] = status;
    return status;
  }
  return 0;
}

double CpuSeconds(const ProcessId& p) {
  if (!IsRunning(p)) return -1;
  const std::vector<std::string> fields = ProcStatFields(p.pid);
  if (fields.size() <= kStatStime) return -1;
  const unsigned long long utime = std::strtoull(fields[kStatUtime].c_str(), nullptr, 10);
  const unsigned long long stime = std::strtoull(fields[kStatStime].c_str(), nullptr, 10);
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

Result<ChildProcess> ChildProcess::Start(const SpawnOptions& options) {
  auto id = Spawn(options);
  if (!id.ok()) return id.status();
  ChildProcess c;
  c.id_ = *id;
  c.log_path_ = options.log_path;
  return c;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : id_(std::exchange(o.id_, ProcessId{})),
      log_path_(std::move(o.log_path_)),
      wait_status_(std::exchange(o.wait_status_, std::nullopt)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    Kill();
    id_ = std::exchange(o.id_, ProcessId{});
    log_path_ = std::move(o.log_path_);
    wait_status_ = std::exchange(o.wait_status_, std::nullopt);
  }
  return *this;
}

void ChildProcess::Signal(int sig) {
  if (id_.pid > 0 && !wait_status_) kill(id_.pid, sig);
}

void ChildProcess::Kill() {
  if (id_.pid <= 0 || wait_status_) return;
  kill(id_.pid, SIGKILL);
  // SIGKILL cannot be caught; the bound only guards against a process stuck
  // in the kernel (D state).
  (void)Wait(std::chrono::seconds(30));
}

int ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (wait_status_) return *wait_status_;
  if (id_.pid <= 0) return -1;
  // Not through IsRunning: that compares start times, and a zombie has none.
  int status = 0;
  if (!TryReap(id_.pid, &status)) {
    auto s = timeout.count() > 0 ? WaitForExit(id_, timeout) : std::nullopt;
    if (!s) return -1;
    status = *s;
  }
  wait_status_ = status;
  return status;
}

int ChildProcess::ExitCode(int wait_status) {
  return wait_status != -1 && WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

std::string ChildProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ChildProcess::WaitForLog(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (Log().find(text) != std::string::npos) return true;
    if (Exited() || std::chrono::steady_clock::now() >= deadline) return Log().find(text) != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a poll interval, not a guess
  }
}

std::string TailOfFile(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += "    " + l + "\n";
  return out;
}

Status WritePortFile(const std::string& path, uint16_t port) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << port << "\n";
    out.flush();
    if (!out) return Status::IoError(fmt::format("cannot write port file '{}': {}", temporary, strerror(errno)));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    return Status::IoError(fmt::format("cannot rename '{}' to '{}': {}", temporary, path, strerror(errno)));
  return Status::Ok();
}

Result<uint16_t> ReadPortFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("no port file '{}'", path));
  unsigned long port = 0;
  if (!(in >> port) || port == 0 || port > 65535)
    return Status::InvalidArgument(fmt::format("port file '{}' holds no port (1-65535)", path));
  return static_cast<uint16_t>(port);
}

}  // namespace pulse::cluster
