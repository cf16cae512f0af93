// pulse bench tx: chain-replicated transactions against the HyperLoop-like
// baseline (src/bench/tx_bench.h).  Prints a table, or one JSON object
// (--json).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "bench/tx_bench.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/nothing_ran.h"

namespace pulse::tools {

void AddTxBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::TxBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "tx",
      "Chain-replicated transactions (pulse::tx::Chain: one request to the head, per-key locks, durable logs,\n"
      "forwarded down the chain) against the HyperLoop-like baseline (the client drives one replicated write\n"
      "per key, in sequence, and reads each key one-sidedly at the tail), on the same chain: throughput,\n"
      "mean/p50/p99, memory-node CPU, one-sided operations and messages per transaction.");
  cmd->add_option("--system", opts->system, "pulse-chain | hyperloop | all")
      ->capture_default_str()
      ->check(CLI::IsMember({"pulse-chain", "hyperloop", "all"}));
  cmd->add_option("--shapes", opts->shapes, "(reads,writes) pairs, ';'-separated")->capture_default_str();
  cmd->add_option("--value-bytes", opts->value_bytes, "Value sizes (1..4096), comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--memory-nodes", opts->memory_nodes, "Replicas of the chain (memory nodes of the started cluster)")
      ->capture_default_str()
      ->check(Within(1, 16));
  cmd->add_option("--keys", opts->keys, "Value slots in the chain's region")->capture_default_str()->check(Within(1, kMaxCount));
  cmd->add_option("--seconds", opts->seconds, "Measured phase per configuration")
      ->capture_default_str()
      ->check(Within(0.1, 3600));
  cmd->add_option("--log-sync", opts->log_sync,
                  "fdatasync (one per group commit on every replica) | none (page cache only: the protocol\n"
                  "without the disk, as the papers' NVM); for a started cluster")
      ->capture_default_str()
      ->check(CLI::IsMember({"fdatasync", "none"}));
  cmd->add_option("--replica-path", opts->replica_path,
                  "auto (replicas send forwards and acknowledgements by one-sided writes into each other's\n"
                  "rings where the transport has one-sided puts, else as messages) | am (always messages);\n"
                  "for a started cluster")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "am"}));
  cmd->add_option("--seed", opts->seed, "Seed of the key generator")->capture_default_str();
  cmd->add_option("--switch", opts->switch_address, "Join this cluster instead of starting one");
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports for the nodes and the client (default: UCX_TLS)");
  cmd->add_option("--run-dir", opts->run_dir, "Where the cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench tx] " << line << std::endl; };
    auto r = bench::RunTxBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench tx: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    uint64_t done = 0;
    for (const auto& run : r->runs) done += run.transactions;
    RequireWorkDone("bench tx", done, "the number of transactions");
    if (*json) {
      std::cout << r->ToJson(*opts).dump(2) << std::endl;
      return;
    }
    std::cout << fmt::format("{:<12} {:>7} {:>6} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9}\n", "system",
                             "shape", "bytes", "tx/s", "mean us", "p50 us", "p99 us", "mn us/tx", "msgs/tx", "1-sided",
                             "ring wr");
    for (const auto& run : r->runs)
      std::cout << fmt::format(
          "{:<12} {:>7} {:>6} {:>9.0f} {:>9.1f} {:>9.1f} {:>9.1f} {:>10.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", run.system,
          fmt::format("({},{})", run.reads, run.writes), run.value_bytes, run.throughput_tx, run.latency.mean_us,
          run.latency.p50_us, run.latency.p99_us, run.mn_cpu_us_per_tx, run.messages_per_tx, run.one_sided_per_tx,
          run.ring_writes_per_tx);
    std::cout << fmt::format("load {:.1f}\n", r->load_average);
  });
}

}  // namespace pulse::tools
