// pulse bench ycsb: a hash-table KV store under YCSB on a local cluster of
// racks, on the tiered system and its baselines (src/bench/ycsb_bench.h).
// Prints one JSON object (--json) or a table.
#include <cctype>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/ycsb_ablation.h"
#include "bench/ycsb_bench.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/nothing_ran.h"

namespace pulse::tools {

namespace {

void PrintYcsbTable(const bench::YcsbBenchOptions& o, const bench::YcsbBenchResult& r) {
  std::cout << fmt::format("{:<11} {:>11} {:>9} {:>9} {:>8} {:>8} {:>8}\n", "system", "ops/s", "p50 us", "p99 us",
                           "msg/op", "rma/op", "local");
  for (const auto& s : r.systems)
    std::cout << fmt::format("{:<11} {:>11.0f} {:>9.1f} {:>9.1f} {:>8.2f} {:>8.2f} {:>8.2f}\n", s.system,
                             s.throughput_ops, s.latency.p50_us, s.latency.p99_us, s.messages_per_op,
                             s.one_sided_per_op, s.local_rack_fraction);
  if (!o.swap) {
    std::cout << "swap: off\n";
    return;
  }
  for (const auto& s : r.systems) {
    if (s.system != "tiered" && s.system != "all-local") continue;
    std::string outcomes;
    for (const auto& [outcome, n] : s.swap_outcomes) outcomes += fmt::format("{}{} {}", outcomes.empty() ? "" : ", ", n, outcome);
    std::cout << fmt::format("swap: on (H_p {}, {} KiB pages); {}: {} requests, {} swaps finished ({}), {} waits for a "
                             "moving page\n",
                             o.hot_threshold, o.page_bytes / 1024, s.system, s.swap_requests, s.swaps_finished,
                             outcomes.empty() ? "none" : outcomes, s.page_move_waits);
  }
}

void RunAblation(const bench::YcsbBenchOptions& o, bool json) {
  auto r = bench::RunYcsbAblation(o);
  if (!r.ok()) {
    std::cerr << "bench ycsb --ablation: " << r.status().ToString() << "\n";
    throw CLI::RuntimeError(1);
  }
  uint64_t ops = 0;
  for (const auto& rung : *r) ops += rung.result ? rung.result->ops : 0;
  RequireWorkDone("bench ycsb --ablation", ops, "the number of measured operations");
  if (json) {
    std::cout << bench::YcsbAblationJson(o, *r).dump(2) << std::endl;
    return;
  }
  std::cout << fmt::format("{:<14} {:>11} {:>9} {:>9} {:>8} {:>8}\n", "rung", "ops/s", "p50 us", "p99 us", "msg/op",
                           "rma/op");
  for (const auto& rung : *r) {
    if (!rung.result) {
      std::cout << fmt::format("{:<14} {}\n", rung.name, rung.note);
      continue;
    }
    const auto& s = *rung.result;
    std::cout << fmt::format("{:<14} {:>11.0f} {:>9.1f} {:>9.1f} {:>8.2f} {:>8.2f}\n", rung.name, s.throughput_ops,
                             s.latency.p50_us, s.latency.p99_us, s.messages_per_op, s.one_sided_per_op);
  }
}

}  // namespace

void AddYcsbBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::YcsbBenchOptions>();
  auto json = std::make_shared<bool>(false);
  auto workload = std::make_shared<std::string>("C");
  auto swaps = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"off"});
  auto hot_thresholds = std::make_shared<std::vector<double>>(std::vector<double>{opts->hot_threshold});
  auto page_kib = std::make_shared<uint64_t>(opts->page_bytes / 1024);
  auto value_bytes = std::make_shared<std::vector<uint32_t>>(std::vector<uint32_t>{opts->workload.value_bytes});
  auto rrpc_thresholds = std::make_shared<std::vector<uint32_t>>();
  auto rrpc_cache = std::make_shared<std::string>("on");
  auto ablation = std::make_shared<bool>(false);
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
  cmd->add_option("--value-bytes", *value_bytes,
                  "Value bytes (comma-separated: one run each); over 88 only for object-rpc with --rrpc-threshold")
      ->delimiter(',')
      ->capture_default_str()
      ->check(Within(1, 1 << 20));
  cmd->add_option("--rrpc-threshold", *rrpc_thresholds,
                  "object-rpc with RDMA-optimised RPC: values are objects; payloads up to this many bytes come "
                  "inline in the reply, larger ones by address and a one-sided read (comma-separated: one run each)")
      ->delimiter(',')
      ->check(Within(0, 1 << 30));
  cmd->add_option("--rrpc-cache", *rrpc_cache, "RRPC: cache each key's object address after first use: on | off")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--seed", opts->workload.seed, "Seed of the operation streams")->capture_default_str();
  cmd->add_option("--page-cache-ratio", opts->page_cache_ratio, "paging: cache bytes / store bytes per client")
      ->capture_default_str()
      ->check(Within(1e-6, 1));
  cmd->add_option("--swap", *swaps,
                  "Hot-page swaps: on | off (comma-separated: one run each, e.g. off,on); on: the switch moves the "
                  "pages rack clients find hot into their rack, with their allocations (docs/tier.md)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--hot-threshold", *hot_thresholds,
                  "H_p: a page is hot above this hotness (seed 004: 4; comma-separated: one run each)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--page-kib", *page_kib, "Pages of the page directory (a power of two, 4 to 1048576)")
      ->capture_default_str()
      ->check(Within(4, 1 << 20));
  cmd->add_option("--pool-mib", opts->pool_mib, "Each memory node's pool")->capture_default_str()->check(Within(16, 65536));
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports (default: tcp; no shared-memory transport)");
  cmd->add_option("--run-dir", opts->run_dir, "Where the cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_flag("--ablation", *ablation,
                "The ablation ladder (seed 004 Fig. 18) on the tiered system: Base, +double ring, +swap, "
                "+write buffer, +RRPC (rungs not built are listed, not measured)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json, workload, swaps, hot_thresholds, page_kib, value_bytes, rrpc_thresholds, rrpc_cache,
                 ablation] {
    if (workload->size() != 1) {
      std::cerr << "bench ycsb: --workload " << *workload << " is not one letter\n";
      throw CLI::RuntimeError(1);
    }
    opts->workload.workload = static_cast<char>(std::toupper(static_cast<unsigned char>((*workload)[0])));
    opts->swap = swaps->front() == "on";
    opts->hot_threshold = hot_thresholds->front();
    opts->page_bytes = *page_kib * 1024;
    opts->progress = [](const std::string& line) { std::cerr << "[bench ycsb] " << line << std::endl; };
    opts->rrpc_cache = *rrpc_cache == "on";
    if (*ablation) {
      opts->workload.value_bytes = value_bytes->front();
      if (!rrpc_thresholds->empty()) opts->rrpc_threshold = rrpc_thresholds->front();
      RunAblation(*opts, *json);
      return;
    }
    // One run per value size, RRPC threshold, swap setting and H_p (each a
    // cluster of its own, one after another); several: a sweep (JSON
    // {"runs": [...]}, a table per run).  H_p matters only with swaps.
    std::vector<std::optional<uint32_t>> thresholds(rrpc_thresholds->begin(), rrpc_thresholds->end());
    if (thresholds.empty()) thresholds.push_back(std::nullopt);
    std::vector<bench::YcsbBenchOptions> runs;
    for (uint32_t vb : *value_bytes)
      for (const std::optional<uint32_t>& t : thresholds)
        for (const std::string& swap : *swaps)
          for (size_t h = 0; h < (swap == "on" ? hot_thresholds->size() : 1); ++h) {
            bench::YcsbBenchOptions o = *opts;
            o.workload.value_bytes = vb;
            o.rrpc_threshold = t;
            o.swap = swap == "on";
            o.hot_threshold = (*hot_thresholds)[h];
            runs.push_back(o);
          }
    nlohmann::json sweep = nlohmann::json::array();
    std::vector<std::pair<bench::YcsbBenchOptions, bench::YcsbBenchResult>> results;
    for (const bench::YcsbBenchOptions& o : runs) {
      auto r = bench::RunYcsbBench(o);
      if (!r.ok()) {
        std::cerr << "bench ycsb: " << r.status().ToString() << "\n";
        throw CLI::RuntimeError(1);
      }
      uint64_t ops = 0;
      for (const auto& s : r->systems) ops += s.ops;
      RequireWorkDone("bench ycsb", ops, "the number of measured operations");
      sweep.push_back(r->ToJson(o));
      results.emplace_back(o, std::move(*r));
    }
    if (*json) {
      std::cout << (results.size() == 1 ? sweep[0] : nlohmann::json{{"runs", sweep}}).dump(2) << std::endl;
      return;
    }
    for (const auto& [o, r] : results) {
      if (results.size() > 1)
        std::cout << fmt::format("value {} B, rrpc threshold {}, swap {}{}\n", o.workload.value_bytes,
                                 o.rrpc_threshold ? std::to_string(*o.rrpc_threshold) : std::string("off"),
                                 o.swap ? "on" : "off", o.swap ? fmt::format(" (H_p {})", o.hot_threshold) : "");
      PrintYcsbTable(o, r);
    }
  });
}

}  // namespace pulse::tools
