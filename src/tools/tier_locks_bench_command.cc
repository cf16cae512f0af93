// pulse bench tier-locks: the write buffer under a write lock on and off,
// side by side (src/bench/tier_locks_bench.h).  Prints one JSON object
// (--json) or a table.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "bench/tier_locks_bench.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/nothing_ran.h"

namespace pulse::tools {

void AddTierLocksBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::TierLocksBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "tier-locks",
      "The write buffer under a write lock (docs/tier.md): a local cluster of two racks; two CPU nodes of\n"
      "rack a write to rack b under an exclusive FarLock, one with the write buffer and one without;\n"
      "writes per second by size, median of the runs");
  cmd->add_option("--sizes", opts->sizes, "Write sizes in bytes (comma-separated)")->delimiter(',')->capture_default_str();
  cmd->add_option("--writes-per-hold", opts->writes_per_hold, "Writes under each hold")
      ->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--holds", opts->holds, "Holds per run, size and side")->capture_default_str()->check(Within(1, kMaxCount));
  cmd->add_option("--runs", opts->runs, "Runs (the figures are their medians)")->capture_default_str()->check(Within(1, 1000));
  cmd->add_option("--ucx-tls", opts->ucx_tls,
                  "UCX transports for the nodes and the clients (default: tcp; no shared-memory transport)");
  cmd->add_option("--run-dir", opts->run_dir, "Where the cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench tier-locks] " << line << std::endl; };
    auto r = bench::RunTierLocksBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench tier-locks: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    RequireWorkDone("bench tier-locks", r->verified, "the number of checked read-backs");
    if (*json) {
      std::cout << r->ToJson().dump(2) << std::endl;
      return;
    }
    std::cout << fmt::format("{:>7} {:>14} {:>14} {:>8}\n", "bytes", "buffer on/s", "buffer off/s", "speedup");
    for (const auto& f : r->figures)
      std::cout << fmt::format("{:>7} {:>14.0f} {:>14.0f} {:>7.2f}x\n", f.bytes, f.buffered_median,
                               f.unbuffered_median, f.speedup);
    std::cout << fmt::format("load average (1 min) {:.2f} before, {:.2f} after\n", r->load_average_before,
                             r->load_average_after);
  });
}

}  // namespace pulse::tools
