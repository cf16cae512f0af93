// pulse bench tier: the rack tier against the fabric, read and write latency
// and throughput by size (src/bench/tier_bench.h).  Prints one JSON object
// (--json) or a table.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/tier_bench.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/nothing_ran.h"

namespace pulse::tools {
namespace {

nlohmann::json ResultJson(const bench::TierBenchResult& r) {
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& f : r.figures)
    figures.push_back({{"bytes", f.bytes},
                       {"tier", f.tier},
                       {"operation", f.operation},
                       {"mean_us", f.latency.mean_us},
                       {"p50_us", f.latency.p50_us},
                       {"p99_us", f.latency.p99_us},
                       {"count", f.latency.count},
                       {"throughput_mib_s", f.throughput_mib_s}});
  return {{"figures", figures},
          {"verified_reads", r.verified_reads},
          {"rack_reads", r.rack_reads},
          {"rack_writes", r.rack_writes},
          {"remote_reads", r.remote_reads},
          {"remote_writes", r.remote_writes},
          {"local_rack_messages_sent", r.messages_sent},
          {"ucx_tls", r.transport},
          {"load_average_1m", r.load_average}};
}

}  // namespace

void AddTierBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::TierBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "tier",
      "The rack tier (docs/racks.md): a local cluster of two racks; Client::Read / Write latency and\n"
      "throughput by size for memory in the CPU node's rack (loads and stores through the mapped\n"
      "pool) and in the other rack (one-sided operations over UCX)");
  cmd->add_option("--sizes", opts->sizes, "Access sizes in bytes (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--samples", opts->samples, "Measured operations per size, tier and direction")
      ->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--warmup", opts->warmup, "Unmeasured reads per size and tier")->capture_default_str()
      ->check(Within(0, kMaxCount));
  cmd->add_option("--ucx-tls", opts->ucx_tls,
                  "UCX transports for the nodes and the client (default: tcp; no shared-memory transport)");
  cmd->add_option("--run-dir", opts->run_dir, "Where the cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench tier] " << line << std::endl; };
    auto r = bench::RunTierBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench tier: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    RequireWorkDone("bench tier", r->verified_reads, "the number of checked reads");
    if (*json) {
      std::cout << ResultJson(*r).dump(2) << std::endl;
      return;
    }
    std::cout << fmt::format("{:>7} {:<12} {:<6} {:>9} {:>9} {:>9} {:>11}\n", "bytes", "tier", "op", "mean us",
                             "p50 us", "p99 us", "MiB/s");
    for (const auto& f : r->figures)
      std::cout << fmt::format("{:>7} {:<12} {:<6} {:>9.2f} {:>9.2f} {:>9.2f} {:>11.1f}\n", f.bytes, f.tier,
                               f.operation, f.latency.mean_us, f.latency.p50_us, f.latency.p99_us, f.throughput_mib_s);
    std::cout << fmt::format("messages sent during local-rack operations: {}\n", r->messages_sent);
  });
}

}  // namespace pulse::tools
