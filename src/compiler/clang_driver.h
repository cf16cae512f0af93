// Finding and running clang, and temporary directories.  Internal.
#pragma once

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

// Runs argv[0] (looked up on PATH) with argv and waits for it.
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
