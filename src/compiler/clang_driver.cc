#include "compiler/clang_driver.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "common/bounded_file.h"

extern char** environ;

namespace pulse::compiler {
namespace {

namespace fs = std::filesystem;

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string SearchPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return IsExecutable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const std::string p = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (IsExecutable(p) && !fs::is_directory(p)) return p;
  }
  return "";
}

}  // namespace

Result<std::string> FindClangExecutable(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    std::string p = SearchPath(explicit_path);
    if (p.empty()) return Status::NotFound(fmt::format("clang '{}' not found or not executable", explicit_path));
    return p;
  }
  if (const char* env = std::getenv("PULSE_CLANG"); env && *env) {
    std::string p = SearchPath(env);
    if (p.empty()) return Status::NotFound(fmt::format("PULSE_CLANG='{}' not found or not executable", env));
    return p;
  }
  const char* names[] = {"clang", "clang-14", "clang-15", "clang-16", "clang-17", "clang-18", "clang-19"};
  for (const char* n : names) {
    std::string p = SearchPath(n);
    if (!p.empty()) return p;
  }
  return Status::NotFound(
      "clang not found on PATH (tried clang, clang-14 .. clang-19): install clang (`make setup` "
      "or `apt-get install clang`) or set PULSE_CLANG to the clang executable");
}

Result<ProcessLimits> ClangLimits() {
  ProcessLimits limits;
  auto positive = [](const char* name, uint64_t max, uint64_t* out) -> Status {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return Status::Ok();
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v > max || text[0] == '-')
      return Status::InvalidArgument(fmt::format("{}='{}' must be an integer from 1 to {}", name, text, max));
    *out = v;
    return Status::Ok();
  };
  uint64_t ms = 0, mib = 0;
  PULSE_RETURN_IF_ERROR(positive("PULSE_CLANG_TIMEOUT_MS", 24ull * 3600 * 1000, &ms));
  PULSE_RETURN_IF_ERROR(positive("PULSE_CLANG_MEMORY_MIB", 1ull << 20, &mib));
  if (ms != 0) limits.cpu = limits.wall = std::chrono::milliseconds(ms);
  if (mib != 0) limits.address_space_bytes = mib << 20;
  return limits;
}

Result<ProcessOutput> RunProcess(const std::vector<std::string>& argv) {
  auto limits = ClangLimits();
  if (!limits.ok()) return limits.status();
  return RunProcess(argv, *limits);
}

Result<ProcessOutput> RunProcess(const std::vector<std::string>& argv, const ProcessLimits& limits) {
  if (argv.empty()) return Status::InvalidArgument("RunProcess: empty command");
  auto dir = TempDir::Create();
  if (!dir.ok()) return dir.status();
  const std::string log = dir->path() + "/output.txt";
  // Everything the child uses is prepared before fork: after fork only
  // async-signal-safe calls (open, dup2, setrlimit, execve).
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) return Status::IoError(fmt::format("cannot create {}: {}", log, std::strerror(errno)));
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const rlimit as{limits.address_space_bytes, limits.address_space_bytes};
  const rlimit fsize{limits.output_file_bytes, limits.output_file_bytes};
  const rlim_t cpu_s = static_cast<rlim_t>(std::max<int64_t>(1, (limits.cpu.count() + 999) / 1000));
  const rlimit cpu{cpu_s, cpu_s + 1};  // SIGXCPU at the soft limit, SIGKILL a second later
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return Status::IoError(fmt::format("fork for {}: {}", argv[0], std::strerror(e)));
  }
  if (pid == 0) {
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    setrlimit(RLIMIT_AS, &as);
    setrlimit(RLIMIT_FSIZE, &fsize);
    setrlimit(RLIMIT_CPU, &cpu);
    execve(args[0], args.data(), environ);
    _exit(127);
  }
  close(log_fd);
  if (null_fd >= 0) close(null_fd);

  // Wait on a pidfd, which turns readable when the child ends: no polling.
  const auto deadline = std::chrono::steady_clock::now() + limits.wall;
  bool timed_out = false;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd pfd{pidfd, POLLIN, 0};
      const int rc = poll(&pfd, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT32_MAX)));
      if (rc < 0 && errno == EINTR) continue;
      timed_out = rc == 0;
      break;
    }
    close(pidfd);
  }
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::IoError(fmt::format("waitpid: {}", std::strerror(errno)));
  }
  if (timed_out)
    return Status::Timeout(fmt::format("{} did not finish within its time limit of {} ms and was killed "
                                       "($PULSE_CLANG_TIMEOUT_MS raises it)",
                                       argv[0], limits.wall.count()));
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
    return Status::ResourceExhausted(fmt::format("{} was stopped at its CPU time limit of {} s "
                                                 "($PULSE_CLANG_TIMEOUT_MS raises it)",
                                                 argv[0], cpu_s));
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ)
    return Status::ResourceExhausted(fmt::format("{} wrote more than its file size limit of {} MiB", argv[0],
                                                 limits.output_file_bytes >> 20));
  ProcessOutput out;
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto text = ReadInputFile(log, limits.output_file_bytes, "clang output");
  if (!text.ok()) return text.status();
  out.output = std::move(*text);
  if (out.exit_code != 0 && out.output.find("out of memory") != std::string::npos)
    out.output += fmt::format("\n(clang's address space is limited to {} MiB; $PULSE_CLANG_MEMORY_MIB raises it)",
                              limits.address_space_bytes >> 20);
  return out;
}

Result<TempDir> TempDir::Create() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/pulse-cc-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    return Status::IoError(fmt::format("cannot create a temporary directory {}: {}", templ,
                                       std::strerror(errno)));
  return TempDir(std::string(buf.data()));
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string PulseIncludeDir() {
  if (const char* env = std::getenv("PULSE_INCLUDE_DIR"); env && *env) return env;
  std::error_code ec;
#ifdef PULSE_SOURCE_INCLUDE_DIR
  if (fs::exists(fs::path(PULSE_SOURCE_INCLUDE_DIR) / "pulse" / "iterator.h", ec))
    return PULSE_SOURCE_INCLUDE_DIR;
#endif
#ifdef PULSE_INSTALL_INCLUDE_DIR
  if (fs::exists(fs::path(PULSE_INSTALL_INCLUDE_DIR) / "pulse" / "iterator.h", ec))
    return PULSE_INSTALL_INCLUDE_DIR;
#endif
  return "";
}

}  // namespace pulse::compiler
