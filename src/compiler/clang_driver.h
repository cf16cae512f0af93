// Finding and running clang, and temporary directories.  Internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "pulse/status.h"

namespace pulse::compiler {

// `explicit_path` if set, else $PULSE_CLANG, else the first of clang,
// clang-14 .. clang-19 found on PATH.
Result<std::string> FindClangExecutable(const std::string& explicit_path);

struct ProcessOutput {
  int exit_code = 0;     // 128 + signal number if killed by a signal
  std::string output;    // stdout and stderr, interleaved
};

// What a run of clang may use, so that a pathological source (or a broken
// clang) cannot take the machine's memory or hang `pulse compile`.  Set in
// the child with setrlimit; the wall-clock limit is enforced by the parent,
// which SIGKILLs the child when it passes.
struct ProcessLimits {
  uint64_t address_space_bytes = 4ull << 30;  // RLIMIT_AS
  uint64_t output_file_bytes = 64ull << 20;   // RLIMIT_FSIZE: the object, the output
  std::chrono::milliseconds cpu{120000};      // RLIMIT_CPU (whole seconds, at least 1)
  std::chrono::milliseconds wall{120000};     // killed after this
};

// The defaults above, with $PULSE_CLANG_TIMEOUT_MS (wall and CPU time) and
// $PULSE_CLANG_MEMORY_MIB (address space) applied when set.  Errors:
// InvalidArgument naming the variable if it is not a positive integer.
Result<ProcessLimits> ClangLimits();

// Runs argv[0] (a path; FindClangExecutable's answer) with argv under
// `limits` and waits for it; stdout and stderr go to a temporary file that
// is removed on return.  Errors: IoError if it cannot be started; Timeout
// (the child is killed) after limits.wall; ResourceExhausted if it was
// killed by its CPU or file-size limit; each names the limit and how to
// raise it.  Other failures are exit codes in the output.
Result<ProcessOutput> RunProcess(const std::vector<std::string>& argv, const ProcessLimits& limits);
// RunProcess(argv, ClangLimits()).
Result<ProcessOutput> RunProcess(const std::vector<std::string>& argv);

// A private temporary directory, removed with everything in it on
// destruction.
class TempDir {
 public:
  static Result<TempDir> Create();
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// pulse's include directory (the one holding pulse/iterator.h): $PULSE_INCLUDE_DIR,
// else the source tree's or install prefix's include directory, whichever exists.
std::string PulseIncludeDir();

}  // namespace pulse::compiler
