// pulse bench rpc: pulse offload vs the RPC baselines on the same structures
// (src/bench/rpc_bench.h).  Prints a table, or one JSON object (--json).
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/rpc_bench.h"
#include "tools/commands.h"
#include "tools/nothing_ran.h"
#include "tools/flag_checks.h"

namespace pulse::tools {

void AddRpcBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::RpcBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "rpc",
      "pulse offload vs rpc (native handler on the memory node's CPU, re-issued at node boundaries) vs\n"
      "rpc-wimpy (the same on an emulated ~1 GHz core) on one hash table, B+tree and list spread over\n"
      "a local cluster: latency, node crossings and memory-node CPU time per operation");
  cmd->add_option("--memory-nodes", opts->memory_nodes, "Memory nodes of the started cluster")
      ->capture_default_str()
      ->check(Within(1, 16));
  cmd->add_option("--policy", opts->policy, "Object placement: uniform (most pointers cross nodes) or local-first")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, AllocationPolicy>{{"uniform", AllocationPolicy::kUniform},
                                                  {"local-first", AllocationPolicy::kLocalFirst}},
          CLI::ignore_case));
  cmd->add_option("--map-keys", opts->map_keys, "Hash-table entries")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--chain", opts->chain, "Mean hash-chain length (buckets = keys / chain)")->capture_default_str()
      ->check(Within(1, 1e6));
  cmd->add_option("--tree-keys", opts->tree_keys, "B+tree entries")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--range-keys", opts->range_keys, "Keys per btree_aggregate range")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--list-length", opts->list_length, "List elements")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--samples", opts->samples, "Measured operations per figure")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--rounds", opts->rounds, "Rounds the systems take turns in")
      ->capture_default_str()
      ->check(Within(1, 1000));
  cmd->add_option("--operations", opts->operations,
                  "Subset of umap_find, btree_lower_bound, btree_aggregate, list_aggregate (default: all)");
  cmd->add_option("--poll-window-us", opts->poll_window_us,
                  "Adaptive polling window of the nodes and the client (0: the nodes sleep at once, as in\n"
                  "config/local.toml, and the client polls the default window)")
      ->capture_default_str()
      ->check(Within(0, kMaxPollWindowUs));
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports for the nodes and the client (default: UCX_TLS)");
  cmd->add_option("--run-dir", opts->run_dir, "Where the cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench rpc] " << line << std::endl; };
    auto r = bench::RunRpcBench(*opts);
    if (r.ok()) RequireWorkDone("bench rpc", r->figures.empty() ? 0 : r->verified, "the number of checked answers");
    if (!r.ok()) {
      std::cerr << "bench rpc: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    if (*json) {
      nlohmann::json figures = nlohmann::json::array();
      for (const auto& f : r->figures)
        figures.push_back({{"operation", f.operation},
                           {"system", f.system},
                           {"p50_us", f.latency.p50_us},
                           {"mean_us", f.latency.mean_us},
                           {"p99_us", f.latency.p99_us},
                           {"count", f.latency.count},
                           {"crossings_per_op", f.crossings_per_op},
                           {"mn_cpu_us_per_op", f.node_cpu_us_per_op},
                           {"mn_exec_us_per_op", f.node_exec_us_per_op}});
      std::cout << nlohmann::json{{"figures", figures},
                                  {"memory_nodes", r->memory_nodes},
                                  {"policy", r->policy},
                                  {"host_ghz", r->host_ghz},
                                  {"core_ghz", r->core_ghz},
                                  {"verified", r->verified},
                                  {"ucx_tls", r->transport.empty() ? "(UCX's choice)" : r->transport},
                                  {"load_average_1m", r->load_average}}
                       .dump(2)
                << std::endl;
      return;
    }
    std::cout << fmt::format("{:<18} {:<10} {:>9} {:>9} {:>9} {:>10} {:>12} {:>12}\n", "operation", "system",
                             "p50 us", "mean us", "p99 us", "cross/op", "mn cpu us/op", "mn exec us/op");
    for (const auto& f : r->figures)
      std::cout << fmt::format("{:<18} {:<10} {:>9.1f} {:>9.1f} {:>9.1f} {:>10.2f} {:>12.1f} {:>12.2f}\n",
                               f.operation, f.system, f.latency.p50_us, f.latency.mean_us, f.latency.p99_us,
                               f.crossings_per_op, f.node_cpu_us_per_op, f.node_exec_us_per_op);
    std::string ghz;
    for (double g : r->host_ghz) ghz += fmt::format("{}{:.2f}", ghz.empty() ? "" : ", ", g);
    std::cout << fmt::format("placement {}; ", r->policy);
    std::cout << fmt::format("memory nodes {}; host core GHz (calibrated) {}; rpc-wimpy emulates {:.2f} GHz; "
                             "{} answers cross-checked; load {:.1f}\n",
                             r->memory_nodes, ghz, r->core_ghz, r->verified, r->load_average);
  });
}

}  // namespace pulse::tools
