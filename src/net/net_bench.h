// `pulse bench net`: the cost of the adaptive poll window.
//
// RunNetBench forks one server process per configuration (before it uses
// UCX itself), then for each configuration runs an active-message ping-pong
// from this process to that server, both sides using the same poll mode:
//
//   back_to_back  `iterations` round trips, each sent as soon as the
//                 previous reply arrived (a loaded connection)
//   paced         `paced_iterations` round trips separated by `paced_gap_us`
//                 of idleness (a lightly loaded connection)
//   idle          `idle_ms` without traffic
//
// and prints one JSON object: per configuration the one-way latency
// (round trip / 2: median, mean, p99, in microseconds), the CPU time
// (user + system, getrusage) used per message by the server and by the
// client, the server's sleeps per message, and the server's CPU use while
// idle.  Configurations: adaptive with each poll window in `windows_us`
// (0 = pure sleep on the event fd), and busy polling (-1 in `windows_us`).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace pulse::net {

struct NetBenchOptions {
  uint32_t payload_bytes = 64;
  uint32_t warmup = 500;
  uint32_t iterations = 20000;
  uint32_t paced_iterations = 1000;
  uint32_t paced_gap_us = 1000;
  uint32_t idle_ms = 300;
  // Adaptive poll windows to measure, in microseconds; -1 means busy polling.
  std::vector<int> windows_us = {0, 10, 20, 50, 200, -1};
  // WorkerOptions::yield_while_polling for both sides.
  bool yield_while_polling = true;
  // UCX transports for both sides ("" = UCX's choice / UCX_TLS).
  std::string transports;
  // Extra UCX settings for both sides (name without "UCX_").
  std::vector<std::pair<std::string, std::string>> ucx_config;
  FILE* out = stdout;  // where the JSON goes
};

// Runs the benchmark and prints the JSON object to options.out.  Returns 0
// on success, 1 if a configuration failed (the error is in the JSON and on
// stderr).
int RunNetBench(const NetBenchOptions& options);

}  // namespace pulse::net
