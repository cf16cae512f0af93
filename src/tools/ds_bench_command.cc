// pulse bench ds: far-memory data structures, lookups offloaded vs at the
// CPU node (src/bench/ds_bench.h).  Prints one JSON object (--json) or a table.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/ds_bench.h"
#include "bench/ds_bench_targets_core.h"
#include "bench/ds_bench_targets_lists.h"
#include "bench/ds_bench_targets_trees.h"
#include "tools/commands.h"
#include "tools/nothing_ran.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

// Every structure `pulse bench ds` knows.
bench::DsBenchTargets AllDsBenchTargets() {
  bench::DsBenchTargets targets;
  // Each family of structures registers its targets here (one call each).
  bench::AddCoreBenchTargets(targets);
  bench::AddListBenchTargets(targets);
  bench::AddTreeBenchTargets(targets);
  return targets;
}

nlohmann::json ModeJson(const bench::DsModeResult& m) {
  return {{"p50_us", m.latency.p50_us},
          {"mean_us", m.latency.mean_us},
          {"p99_us", m.latency.p99_us},
          {"min_us", m.latency.min_us},
          {"max_us", m.latency.max_us},
          {"lookups", m.latency.count},
          {"lookups_per_sec", m.lookups_per_sec},
          {"iterations_per_lookup", m.iterations_per_lookup},
          {"wire_bytes_per_lookup", m.wire_bytes_per_lookup},
          {"cross_node_per_lookup", m.cross_node_per_lookup},
          {"cache_hits_per_lookup", m.cache_hits_per_lookup},
          {"found_fraction", m.found_fraction}};
}

nlohmann::json ResultJson(const bench::DsBenchResult& r, uint64_t cache_bytes) {
  nlohmann::json structures = nlohmann::json::array();
  for (const auto& s : r.structures) {
    structures.push_back({{"name", s.name},
                          {"keys", s.keys},
                          {"load_seconds", s.load_seconds},
                          {"verified_lookups", s.verified},
                          {"offload", ModeJson(s.offload)},
                          {"cpu_node", ModeJson(s.cpu_node)},
                          {"cpu_node_vs_offload_p50", s.cpu_node.latency.p50_us / s.offload.latency.p50_us}});
  }
  return {{"structures", structures},
          {"memory_nodes", r.memory_nodes},
          {"cache_bytes", cache_bytes},
          {"switch_address", r.switch_address},
          {"own_cluster", r.own_cluster},
          {"load_average_1m", r.load_average}};
}

std::vector<std::string> SplitNames(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream in(csv);
  for (std::string name; std::getline(in, name, ',');)
    if (!name.empty()) out.push_back(name);
  return out;
}

}  // namespace

void AddDsBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::DsBenchOptions>();
  auto json = std::make_shared<bool>(false);
  auto structures = std::make_shared<std::string>();
  std::string names;
  for (const auto& t : AllDsBenchTargets()) names += (names.empty() ? "" : ", ") + t->name();
  CLI::App* cmd = bench.add_subcommand(
      "ds",
      "Data structures: lookup latency and throughput offloaded vs at the CPU node (one run,\n"
      "interleaved rounds, medians), iterations, wire bytes and cross-node traversals per lookup");
  cmd->add_option("--structures", *structures, "Comma-separated structures (default: all of " + names + ")");
  cmd->add_option("--keys", opts->keys, "Keys loaded into each structure")->capture_default_str()
      ->check(Within(1, 4294967296.0));
  cmd->add_option("--lookups", opts->lookups, "Measured lookups per structure and mode")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--rounds", opts->rounds, "Interleaved rounds the lookups are split into")
      ->capture_default_str()
      ->check(Within(1, 1000));
  cmd->add_option("--warmup", opts->warmup, "Unmeasured lookups per mode and round")->capture_default_str()
      ->check(Within(0, kMaxCount));
  cmd->add_option("--memory-nodes", opts->memory_nodes, "Memory nodes of a started cluster")
      ->capture_default_str()
      ->check(Within(1, 64));
  cmd->add_option("--cache-bytes", opts->cache_bytes, "CPU-node cache of each client (0: none)")->capture_default_str()
      ->check(Within(0, 1ull << 40));
  cmd->add_option("--switch", opts->switch_address, "Join the cluster at this switch (HOST:PORT); default: start one");
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports for the nodes and the client (default: UCX_TLS)");
  cmd->add_option("--run-dir", opts->run_dir, "Where a started cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_option("--seed", opts->seed, "Seed of the lookup keys")->capture_default_str();
  cmd->add_option("--request-timeout-ms", opts->request_timeout_ms,
                  "Per-attempt traversal timeout of the clients (4 attempts)")
      ->capture_default_str()
      ->check(Within(1, kMaxTimeoutMs));
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json, structures] {
    opts->structures = SplitNames(*structures);
    if (isatty(STDERR_FILENO)) {
      opts->progress = [](const std::string& line) { std::cerr << "[bench ds] " << line << std::endl; };
    }
    auto r = bench::RunDsBench(*opts, AllDsBenchTargets());
    if (!r.ok()) {
      std::cerr << "bench ds: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    uint64_t verified = 0;
    for (const auto& s : r->structures) verified += s.verified;
    RequireWorkDone("bench ds", verified, "the number of checked lookups");
    if (*json) {
      std::cout << ResultJson(*r, opts->cache_bytes).dump(2) << std::endl;
      return;
    }
    std::cout << fmt::format("{:<18} {:<8} {:>9} {:>9} {:>10} {:>8} {:>10} {:>7} {:>7}\n", "structure", "mode",
                             "p50 us", "p99 us", "lookups/s", "iters", "wire B", "xnode", "hits");
    for (const auto& s : r->structures) {
      for (const auto& [mode, m] : {std::pair<const char*, const bench::DsModeResult*>{"offload", &s.offload},
                                    {"cpu_node", &s.cpu_node}}) {
        std::cout << fmt::format("{:<18} {:<8} {:>9.1f} {:>9.1f} {:>10.0f} {:>8.1f} {:>10.0f} {:>7.2f} {:>7.1f}\n",
                                 s.name, mode, m->latency.p50_us, m->latency.p99_us, m->lookups_per_sec,
                                 m->iterations_per_lookup, m->wire_bytes_per_lookup, m->cross_node_per_lookup,
                                 m->cache_hits_per_lookup);
      }
    }
  });
}

}  // namespace pulse::tools
