// pulse bench ycsb: a hash-table KV store under YCSB on a local cluster of
// racks, on the tiered system and its baselines (src/bench/ycsb_bench.h).
// Prints one JSON object (--json) or a table.
#include <cctype>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "bench/ycsb_bench.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/nothing_ran.h"

namespace pulse::tools {

void AddYcsbBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::YcsbBenchOptions>();
  auto json = std::make_shared<bool>(false);
  auto workload = std::make_shared<std::string>("C");
  auto swap = std::make_shared<std::string>("off");
  CLI::App* cmd = bench.add_subcommand(
      "ycsb",
      "YCSB A/B/C/D/F on a hash-table KV store over a local cluster of racks (issue 16): the tiered\n"
      "system (kv::Store on rack CPU nodes) against all-local, object-rpc and paging baselines");
  cmd->add_option("--workload", *workload, "A, B, C, D or F")->capture_default_str();
  cmd->add_option("--distribution", opts->workload.distribution, "zipfian (scrambled, theta 0.99) or uniform; D: latest")
      ->capture_default_str();
  cmd->add_option("--system", opts->systems,
                  "tiered, all-local, object-rpc, paging (comma-separated: run side by side in one cluster)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--racks", opts->racks, "Racks (one memory node each)")->capture_default_str()->check(Within(1, 26));
  cmd->add_option("--clients", opts->clients, "Clients per rack (a Client and a store each)")
      ->capture_default_str()
      ->check(Within(1, 64));
  cmd->add_option("--records", opts->workload.records, "Records each client loads")
      ->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--ops", opts->ops, "Measured operations per system, all clients together")
      ->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--warmup", opts->warmup, "Unmeasured operations per client first")
      ->capture_default_str()
      ->check(Within(0, kMaxCount));
  cmd->add_option("--key-bytes", opts->workload.key_bytes, "Key bytes (item = 8 + key + value)")
      ->capture_default_str()
      ->check(Within(16, 32));
  cmd->add_option("--value-bytes", opts->workload.value_bytes, "Value bytes")->capture_default_str()->check(Within(1, 88));
  cmd->add_option("--seed", opts->workload.seed, "Seed of the operation streams")->capture_default_str();
  cmd->add_option("--page-cache-ratio", opts->page_cache_ratio, "paging: cache bytes / store bytes per client")
      ->capture_default_str()
      ->check(Within(1e-6, 1));
  cmd->add_option("--swap", *swap, "Hot-page swaps: on | off (on: reported as not available yet)")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--pool-mib", opts->pool_mib, "Each memory node's pool")->capture_default_str()->check(Within(16, 65536));
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports (default: tcp; no shared-memory transport)");
  cmd->add_option("--run-dir", opts->run_dir, "Where the cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json, workload, swap] {
    if (workload->size() != 1) {
      std::cerr << "bench ycsb: --workload " << *workload << " is not one letter\n";
      throw CLI::RuntimeError(1);
    }
    opts->workload.workload = static_cast<char>(std::toupper(static_cast<unsigned char>((*workload)[0])));
    opts->swap = *swap == "on";
    opts->progress = [](const std::string& line) { std::cerr << "[bench ycsb] " << line << std::endl; };
    auto r = bench::RunYcsbBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench ycsb: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    uint64_t ops = 0;
    for (const auto& s : r->systems) ops += s.ops;
    RequireWorkDone("bench ycsb", ops, "the number of measured operations");
    if (*json) {
      std::cout << r->ToJson(*opts).dump(2) << std::endl;
      return;
    }
    std::cout << fmt::format("{:<11} {:>11} {:>9} {:>9} {:>8} {:>8} {:>8}\n", "system", "ops/s", "p50 us", "p99 us",
                             "msg/op", "rma/op", "local");
    for (const auto& s : r->systems)
      std::cout << fmt::format("{:<11} {:>11.0f} {:>9.1f} {:>9.1f} {:>8.2f} {:>8.2f} {:>8.2f}\n", s.system,
                               s.throughput_ops, s.latency.p50_us, s.latency.p99_us, s.messages_per_op,
                               s.one_sided_per_op, s.local_rack_fraction);
    std::cout << (opts->swap ? "swap: not available (hot-page swaps are not wired yet)\n" : "swap: off\n");
  });
}

}  // namespace pulse::tools
