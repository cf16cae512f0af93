// Reading an input file the tools were given: a regular file of bounded
// size, or an error naming the file and the limit.  Every file a pulse tool
// reads on a user's behalf (programs, iterator sources, cluster configs,
// state files, traces) goes through here, so a directory, a device such as
// /dev/zero, a FIFO or a file of gigabytes is refused with a message
// instead of an uncaught exception or a read until memory runs out.
//
// Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pulse/status.h"

namespace pulse {

// Limits used by the tools (bytes).
constexpr uint64_t kMaxProgramFileBytes = 16ull << 20;  // .pulse / .s / iterator C source
constexpr uint64_t kMaxConfigFileBytes = 1ull << 20;    // cluster TOML, state JSON
constexpr uint64_t kMaxObjectFileBytes = 64ull << 20;   // clang's BPF object
constexpr uint64_t kMaxTraceFileBytes = 4ull << 30;     // a YCSB trace

// Checks that `path` names a regular file (after symlinks) of at most
// `max_bytes`; its size.  `what` names the file's role in messages
// ("program file").  Errors: NotFound if it does not exist; InvalidArgument
// "<what> '<path>' is a directory, not a regular file" or "... is 5.0 GiB,
// more than the limit of 16.0 MiB"; IoError otherwise.
Result<uint64_t> CheckInputFile(const std::string& path, uint64_t max_bytes, std::string_view what);

// Reads the whole of such a file.  The checks are made on the opened file
// (no race with a rename in between), and a file that grows past the limit
// while being read is refused too.  Errors: those of CheckInputFile;
// IoError if reading fails.
Result<std::string> ReadInputFile(const std::string& path, uint64_t max_bytes, std::string_view what);

// "16.0 MiB", "1.5 GiB", "512 B": a size in messages and tables.
std::string DescribeBytes(uint64_t bytes);

}  // namespace pulse
