// The node processes of a local cluster: starting one (own session, output
// to a log file), telling whether it still runs, waiting for it to end,
// signalling it; and ChildProcess, a started process that its owner kills
// when it goes away (the tests' nodes).  This is the one place in pulse that
// forks node processes.
//
// A process is identified by its pid and its start time (field 22 of
// /proc/<pid>/stat), so a pid the kernel has since given to another program
// is never mistaken for a node, and never signalled.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pulse/status.h"

namespace pulse::cluster {

struct ProcessId {
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // /proc/<pid>/stat starttime; 0: unknown
};

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is the executable's path
  // Set (or replaced) in the child's environment, in order.
  std::vector<std::pair<std::string, std::string>> env;
  std::string log_path;           // stdout and stderr, truncated first
  // parent_death_signal to the child when the thread that spawned it exits
  // (PR_SET_PDEATHSIG), also when that thread's process dies unannounced.
  bool die_with_parent = false;
  int parent_death_signal = SIGTERM;
};

// Forks and execs argv in a new session (setsid), stdin from /dev/null,
// stdout and stderr to the log, no other descriptors inherited.  Errors:
// IoError naming the log or the executable (exec failures are reported here,
// not in the log).
Result<ProcessId> Spawn(const SpawnOptions& options);

// True while the process runs (a zombie counts as gone).  Reaps it if it is
// a child of this process.
bool IsRunning(const ProcessId& p);

// If it is a child of this process and has ended: its exit description
// ("exited with status 1", "was killed by signal 9"); else empty.  Reaps it.
std::string ReapChild(const ProcessId& p);

// Sends `sig` if the process still runs.  True if the signal was sent.
bool SignalProcess(const ProcessId& p, int sig);

// Waits until the process has ended, at most `timeout` (sleeping in poll on
// a pidfd: no spinning).  For a child of this process, its wait status
// (reaped; see <sys/wait.h>); for another process, 0 once it is gone.
// std::nullopt if it still runs at the deadline.
std::optional<int> WaitForExit(const ProcessId& p, std::chrono::milliseconds timeout);

// utime + stime of a running process in seconds (/proc/<pid>/stat); -1 if
// it does not run.
double CpuSeconds(const ProcessId& p);

// The start time of a running pid (0 if it does not run).
uint64_t StartTicks(pid_t pid);

// The last `lines` lines of a file (for error messages pointing at a log).
std::string TailOfFile(const std::string& path, size_t lines);

// Port files: how a node told to listen on port 0 tells whoever started it
// which port it got (`pulse switch|memnode --port-file PATH`).  The node
// binds first and writes the file after (one line, the port), so no other
// process can take the port in between.  The write is atomic (a temporary
// file renamed), so a reader never sees half a file.
Status WritePortFile(const std::string& path, uint16_t port);
// The port in the file.  Errors: NotFound if it does not exist (yet),
// InvalidArgument naming the file if it holds no port.
Result<uint16_t> ReadPortFile(const std::string& path);

// A process started with Spawn that this object owns: SIGKILLed and reaped
// when the object is destroyed (or Kill()ed), so it never outlives its
// owner; with SpawnOptions::die_with_parent it does not outlive the owner's
// thread either.  For tests and tools that need nodes under their control
// (kill one, wait for a log line, restart it); `pulse cluster up` detaches
// its nodes instead (Spawn alone).  The log file is the caller's.
// Movable, not copyable; not thread-safe.
class ChildProcess {
 public:
  // Spawns `options`.  Errors: those of Spawn.
  static Result<ChildProcess> Start(const SpawnOptions& options);

  ChildProcess() = default;
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { Kill(); }

  const ProcessId& id() const { return id_; }
  pid_t pid() const { return id_.pid; }
  const std::string& log_path() const { return log_path_; }

  // Sends `sig` if the process has not been reaped.
  void Signal(int sig);
  // SIGKILL, then waits for it (bounded) and reaps it.  Idempotent.
  void Kill();
  // Waits for the process to end; its wait status, or -1 if it still runs
  // after `timeout` (0: just look).
  int Wait(std::chrono::milliseconds timeout);
  bool Exited() { return Wait(std::chrono::milliseconds(0)) != -1; }
  // 0..255 for a wait status of a normal exit, -1 otherwise (also for -1).
  static int ExitCode(int wait_status);

  // Everything the process wrote to its log so far.
  std::string Log() const;
  // Waits until the log contains `text` (true), or the process ended or
  // `timeout` passed without it (false).  Re-reads the log every 10 ms.
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout);
  // utime + stime in seconds; -1 once it ended.
  double CpuSeconds() const { return cluster::CpuSeconds(id_); }

 private:
  ProcessId id_;
  std::string log_path_;
  std::optional<int> wait_status_;  // once reaped
};

}  // namespace pulse::cluster
