// pulse bench ring: the ring layouts side by side under seed 004's mixed
// fast/slow load (src/bench/ring_bench.h).  Prints a table, or one JSON
// object (--json).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "bench/ring_bench.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/nothing_ran.h"

namespace pulse::tools {

void AddRingBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::RingBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "ring",
      "The ring request path's layouts (docs/ring.md) on one connection in this process: fast entries\n"
      "answered at once mixed with slow ones answered --slow-us later (seed 004's local- and remote-rack\n"
      "accesses); per layout the fast and slow entries' latency, including waits for a credit, and\n"
      "the posts refused");
  cmd->add_option("--layouts", opts->layouts, "slots and/or double (repeat or comma-separate)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--slots", opts->slots, "Ring slots (descriptors)")->capture_default_str()->check(Within(1, 1 << 16));
  cmd->add_option("--slot-bytes", opts->slot_bytes, "Slot bytes (double layer: answer space per entry), a multiple of 8")
      ->capture_default_str()
      ->check(Within(64, 1 << 20));
  cmd->add_option("--payload", opts->payload_bytes, "Request payload bytes")->capture_default_str()->check(Within(1, 1 << 20));
  cmd->add_option("--in-flight", opts->in_flight, "Entries the client keeps posted")->capture_default_str()
      ->check(Within(1, 1 << 16));
  cmd->add_option("--slow-fraction", opts->slow_fraction, "Share of entries answered late")->capture_default_str()
      ->check(Within(0, 1));
  cmd->add_option("--slow-us", opts->slow_us, "How late, in microseconds")->capture_default_str()->check(Within(0, 1e7));
  cmd->add_option("--entries", opts->entries, "Measured entries per layout (after 1000 of warm-up)")
      ->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--seed", opts->seed, "Seed of the slow/fast choice")->capture_default_str();
  cmd->add_option("--ucx-tls", opts->transports, "UCX transports for both ends (default: UCX's choice)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench ring] " << line << std::endl; };
    auto r = bench::RunRingBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench ring: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    uint64_t answered = 0;
    for (const auto& l : r->layouts) answered += l.fast.count + l.slow.count;
    RequireWorkDone("bench ring", answered, "the number of answered entries");
    if (*json) {
      std::cout << r->ToJson(*opts).dump(2) << std::endl;
      return;
    }
    std::cout << fmt::format("{:<7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "layout", "entries/s",
                             "fast p50", "fast p99", "fast p999", "slow p50", "slow p99", "waited", "one-sided");
    for (const auto& l : r->layouts) {
      std::cout << fmt::format("{:<7} {:>10.0f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9} {:>9}\n", l.layout,
                               l.entries_per_s, l.fast.p50_us, l.fast.p99_us, l.fast.p999_us, l.slow.p50_us,
                               l.slow.p99_us, l.entries_waited, l.one_sided ? "yes" : "no");
    }
  });
}

}  // namespace pulse::tools
