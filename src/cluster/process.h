// The node processes of a local cluster: starting one detached (own session,
// output to a log file), telling whether it still runs, signalling it.
//
// A process is identified by its pid and its start time (field 22 of
// /proc/<pid>/stat), so a pid the kernel has since given to another program
// is never mistaken for a node, and never signalled.
#pragma once

#include <sys/types.h>

#include <cstdint>
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
  bool die_with_parent = false;   // SIGTERM to the child when this thread exits
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

}  // namespace pulse::cluster
