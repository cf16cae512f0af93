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
// It also prints "suggested_poll_window_us": the smallest adaptive window
// whose back-to-back + paced median latency is within 10% of the best.
//
// Measured on the 2-core test VM, shared with other work (UCX 1.13, 64 B
// payload, paced gap 1 ms; ranges over three runs; one-way median in us;
// server CPU in us per paced message):
//
//               shared memory (default)      TCP loopback (transports=tcp)
//   window      b2b      paced    srv CPU    b2b       paced    srv CPU
//   0 (sleep)   1.3-1.5  25-42    27-36      11.3-13.3 34-39    33-38
//   10          0.7-1.0  23-30    37-38      5.4-6.3   31-39    41-46
//   20          0.6-1.0  15-27    45-51      5.1-10.9  26-37    35-58
//   50          0.7-0.9  13-18    72-77      4.6-10.9  18-31    43-87
//   200         0.7-0.9  13-16    217-229    5.1-10.8  17-25    115-231
//   busy        0.7-0.9  1.5-2.0  1004       4.1-5.2   12-3500  1030-3250
//
// Server CPU while idle: under 0.15% for every adaptive window, 50-100% busy
// (busy polling on a shared 2-core machine can also starve the peer: the
// 3.5 ms paced median).  The upper TCP b2b values are runs where both
// processes shared one core.  Hence kDefaultPollWindowUs = 50
// (include/pulse/net.h).
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
