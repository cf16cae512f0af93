// pulse bench kv: the MICA-style KV store over the ring and the
// active-message paths (src/bench/kv_bench.h).  Prints a table, or one JSON
// object (--json).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "bench/kv_bench.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/nothing_ran.h"

namespace pulse::tools {

void AddKvBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::KvBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "kv",
      "pulse::kv::Store (MICA-style: tagged set-associative buckets, offloaded GET/PUT) at saturation over\n"
      "the ring path and the active-message path: throughput, p50/p99, memory accesses per GET and PUT,\n"
      "memory-node CPU, messages and one-sided operations per request.  With no flags: 100% GET, uniform keys, both paths.  The path flag\n"
      "overrides $PULSE_REQUEST_PATH.");
  cmd->add_option("--path", opts->path,
                  "ring (slots layout) | ring-double (double-layer rings, seed 004 5.2) | am (messages) |\n"
                  "both (ring, am) | rings (ring, ring-double) | all (ring, ring-double, am)")
      ->capture_default_str()
      ->check(CLI::IsMember({"ring", "ring-double", "rings", "am", "both", "all"}));
  cmd->add_option("--system", opts->system,
                  "pulse | rpc (HERD-like: GET as a native handler on the memory node's CPU; --mix get) |\n"
                  "rpc-wimpy (the same on the node's emulated wimpy core, --rpc-core-ghz) | all")
      ->capture_default_str()
      ->check(CLI::IsMember({"pulse", "rpc", "rpc-wimpy", "all"}));
  cmd->add_option("--mix", opts->mix, "get or 100/0 (100% GET) | 50 or 50/50 (50% GET, 50% PUT)")
      ->capture_default_str()
      ->check(CLI::IsMember({"get", "100/0", "50", "50/50"}));
  cmd->add_option("--distribution", opts->distribution, "uniform | zipf (theta 0.9, fixed seed)")
      ->capture_default_str()
      ->check(CLI::IsMember({"uniform", "zipf"}));
  cmd->add_option("--items", opts->items, "Items loaded")->capture_default_str()->check(Within(1, kMaxCount));
  cmd->add_option("--concurrency", opts->concurrency,
                  "Requests in flight (one batch); 0: sweep 4..64 and report the best throughput (saturation)")
      ->capture_default_str()
      ->check(Within(0, 4096));
  cmd->add_option("--key-bytes", opts->key_bytes, "Key capacity (16..32)")->capture_default_str()->check(Within(16, 32));
  cmd->add_option("--value-bytes", opts->value_bytes, "Value capacity (item = 8 + key + value <= 128)")
      ->capture_default_str()
      ->check(Within(0, 88));
  cmd->add_option("--memory-nodes", opts->memory_nodes, "Memory nodes of the started cluster")
      ->capture_default_str()
      ->check(Within(1, 16));
  cmd->add_option("--seconds", opts->seconds, "Measured phase per path")->capture_default_str()->check(Within(0.1, 3600));
  cmd->add_option("--seed", opts->seed, "Seed of the key and mix generators")->capture_default_str();
  cmd->add_option("--switch", opts->switch_address, "Join this cluster instead of starting one");
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports for the nodes and the clients (default: UCX_TLS)");
  cmd->add_option("--run-dir", opts->run_dir, "Where the cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench kv] " << line << std::endl; };
    auto r = bench::RunKvBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench kv: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    uint64_t verified = 0;
    for (const auto& p : r->paths) verified += p.verified + p.puts;
    RequireWorkDone("bench kv", verified, "the number of checked GETs and PUTs");
    if (*json) {
      std::cout << r->ToJson(*opts).dump(2) << std::endl;
      return;
    }
    std::cout << fmt::format("{:<11} {:>6} {:>12} {:>9} {:>9} {:>14} {:>9} {:>12} {:>12} {:>12}\n", "path", "conc",
                             "requests/s", "p50 us", "p99 us", "mn cpu us/req", "msgs/req", "1-sided/req", "ring reqs",
                             "fallbacks");
    for (const auto& p : r->paths)
      std::cout << fmt::format("{:<11} {:>6} {:>12.0f} {:>9.1f} {:>9.1f} {:>14.2f} {:>9.2f} {:>12.2f} {:>12} {:>12}\n",
                               p.path, p.concurrency, p.throughput_ops, p.latency.p50_us, p.latency.p99_us,
                               p.mn_cpu_us_per_op, p.messages_per_request, p.one_sided_per_request, p.ring_requests,
                               p.ring_fallbacks);
    std::cout << fmt::format("memory accesses per GET {:.2f}, per PUT {:.2f} ({}); load {:.1f}\n",
                             r->accesses_per_get, r->accesses_per_put, r->accesses_per_put_from, r->load_average);
  });
}

}  // namespace pulse::tools
