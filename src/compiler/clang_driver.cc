#include "compiler/clang_driver.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

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

Result<ProcessOutput> RunProcess(const std::vector<std::string>& argv) {
  auto dir = TempDir::Create();
  if (!dir.ok()) return dir.status();
  const std::string log = dir->path() + "/output.txt";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Status::IoError(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::IoError(fmt::format("waitpid: {}", std::strerror(errno)));
  }
  ProcessOutput out;
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream f(log, std::ios::binary);
  out.output.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
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
