// pulse bench tier: the rack tier against the fabric, read and write latency
// and throughput by size (src/bench/tier_bench.h).  Prints one JSON object
// (--json) or a table.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/tier_bench.h"
#include "bench/tier_swap_bench.h"
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

nlohmann::json SwapJson(const std::vector<bench::TierSwapFigure>& figures) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : figures)
    out.push_back({{"swap", f.swap},
                   {"distribution", f.distribution},
                   {"ops", f.ops},
                   {"throughput_ops", f.throughput_ops},
                   {"read", bench::LatencyJson(f.read)},
                   {"write", bench::LatencyJson(f.write)},
                   {"local_fraction", f.local_fraction},
                   {"swap_requests", f.swap_requests},
                   {"swaps_finished", f.swaps_finished},
                   {"swaps_failed", f.swaps_failed},
                   {"page_move_waits", f.page_move_waits},
                   {"last_swap_failure", f.last_failure},
                   {"swap_outcomes", f.swap_outcomes},
                   {"verified_reads", f.verified_reads}});
  return out;
}

}  // namespace

void AddTierBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::TierBenchOptions>();
  auto swap = std::make_shared<bench::TierSwapOptions>();
  auto skip_swap = std::make_shared<bool>(false);
  auto page_kib = std::make_shared<uint64_t>(swap->page_bytes / 1024);
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "tier",
      "The rack tier (docs/racks.md): a local cluster of two racks; Client::Read / Write latency and\n"
      "throughput by size for memory in the CPU node's rack (loads and stores through the mapped\n"
      "pool) and in the other rack (one-sided operations over UCX); then the swap study: objects of\n"
      "rack b read and written by the rack-a CPU node, uniform and Zipfian, with hot-page swaps off\n"
      "and on (pages that become hot move into rack a with what they hold; docs/tier.md)");
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
  cmd->add_option("--swap", swap->swaps, "Swap study: hot-page swaps off, on (comma-separated: a cluster each)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--distribution", swap->distributions, "Swap study: which objects: uniform, zipfian (theta 0.99)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--swap-ops", swap->ops, "Swap study: operations per swap setting and distribution (half reads)")
      ->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--objects", swap->objects, "Swap study: objects in rack b")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--object-bytes", swap->object_bytes, "Swap study: bytes per object (a divisor of the page)")
      ->capture_default_str();
  cmd->add_option("--page-kib", *page_kib, "Swap study: pages of the page directory (a power of two)")
      ->capture_default_str();
  cmd->add_option("--hot-threshold", swap->hot_threshold, "Swap study: H_p (seed 004: 4)")->capture_default_str();
  cmd->add_option("--pool-mib", swap->pool_mib,
                  "Swap study: each memory node's pool (0: twice the objects' bytes and 16 MiB more, at least 64)")
      ->capture_default_str();
  cmd->add_flag("--no-swap-study", *skip_swap, "Only the size sweep");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, swap, skip_swap, page_kib, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench tier] " << line << std::endl; };
    swap->page_bytes = *page_kib * 1024;
    swap->binary = opts->binary;
    swap->run_dir = opts->run_dir;
    swap->ucx_tls = opts->ucx_tls;
    swap->progress = opts->progress;
    if (Status s = bench::CheckTierSwapOptions(*swap); !*skip_swap && !s.ok()) {
      std::cerr << s.message() << "\n";
      throw CLI::RuntimeError(1);
    }
    auto r = bench::RunTierBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench tier: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    RequireWorkDone("bench tier", r->verified_reads, "the number of checked reads");
    std::vector<bench::TierSwapFigure> study;
    if (!*skip_swap) {
      auto s = bench::RunTierSwapStudy(*swap);
      if (!s.ok()) {
        std::cerr << "bench tier: swap study: " << s.status().ToString() << "\n";
        throw CLI::RuntimeError(1);
      }
      study = std::move(*s);
    }
    if (*json) {
      nlohmann::json j = ResultJson(*r);
      if (!*skip_swap) {
        j["swap_study"] = SwapJson(study);
        j["swap_study_page_bytes"] = swap->page_bytes;
        j["swap_study_hot_threshold"] = swap->hot_threshold;
      }
      std::cout << j.dump(2) << std::endl;
      return;
    }
    std::cout << fmt::format("{:>7} {:<12} {:<6} {:>9} {:>9} {:>9} {:>11}\n", "bytes", "tier", "op", "mean us",
                             "p50 us", "p99 us", "MiB/s");
    for (const auto& f : r->figures)
      std::cout << fmt::format("{:>7} {:<12} {:<6} {:>9.2f} {:>9.2f} {:>9.2f} {:>11.1f}\n", f.bytes, f.tier,
                               f.operation, f.latency.mean_us, f.latency.p50_us, f.latency.p99_us, f.throughput_mib_s);
    std::cout << fmt::format("messages sent during local-rack operations: {}\n", r->messages_sent);
    if (study.empty()) return;
    std::cout << fmt::format("\nswap study ({} objects of {} B in rack b, {} KiB pages, H_p {}):\n", swap->objects,
                             swap->object_bytes, swap->page_bytes / 1024, swap->hot_threshold);
    std::cout << fmt::format("{:<5} {:<8} {:>10} {:>12} {:>12} {:>7} {:>6}\n", "swap", "keys", "ops/s",
                             "read p50 us", "write p50 us", "local", "swaps");
    for (const auto& f : study)
      std::cout << fmt::format("{:<5} {:<8} {:>10.0f} {:>12.2f} {:>12.2f} {:>7.2f} {:>6}\n", f.swap, f.distribution,
                               f.throughput_ops, f.read.p50_us, f.write.p50_us, f.local_fraction, f.swaps_finished);
  });
}

}  // namespace pulse::tools
