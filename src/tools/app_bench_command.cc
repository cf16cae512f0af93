// pulse bench app: one of the paper's applications on one system
// (src/bench/app_bench.h).  Prints one JSON object (--json) or a summary.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/app_bench.h"
#include "bench/app_systems.h"
#include "pulse/engine.h"
#include "tools/commands.h"
#include "tools/nothing_ran.h"
#include "tools/flag_checks.h"

namespace pulse::tools {

void AddFabricFlags(CLI::App* cmd, bench::FabricModel* fabric) {
  cmd->add_option("--fabric-one-way-us", fabric->one_way_us,
                  "Rack projection (a model, docs/evaluation.md): one-way message latency in us")
      ->capture_default_str()
      ->check(Within(0, 1e6));
  cmd->add_option("--fabric-gbps", fabric->gbps, "Rack projection: link bandwidth in Gbit/s")
      ->capture_default_str()
      ->check(Within(0.001, 1e6));
}

void AddAppBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::AppBenchOptions>();
  auto json = std::make_shared<bool>(false);
  auto mode = std::make_shared<std::string>("offload");
  std::string systems;
  for (const auto& s : bench::AppSystems()) systems += fmt::format("\n  {:<10} {}", s.name, s.description);
  CLI::App* cmd = bench.add_subcommand(
      "app", "One of the paper's applications (webservice, wiredtiger, btrdb) on one system, closed-loop\n"
             "(and open-loop with --rate); systems:" + systems);
  cmd->add_option("--app", opts->app, "webservice | wiredtiger | btrdb")->capture_default_str();
  cmd->add_option("--system", opts->system, "The system to run on (see above)")->capture_default_str();
  cmd->add_option("--memory-nodes", opts->memory_nodes, "Memory nodes of the started cluster")
      ->capture_default_str()
      ->check(Within(1, 64));
  cmd->add_option("--pipelines", opts->pipelines,
                  "Engine pipelines (threads) per memory node of the started cluster (default: the node's,\n"
                  "$PULSE_PIPELINES else 1)")
      ->check(Within(1, kMaxPipelinesPerNode));
  cmd->add_option("--engine", opts->engine,
                  "interp or jit on every memory node of the started cluster (default: the node's,\n"
                  "$PULSE_ENGINE else jit on x86-64)")
      ->check(CLI::IsMember({"interp", "jit"}));
  cmd->add_option("--switch", opts->switch_address, "Join the cluster at this switch instead of starting one");
  cmd->add_option("--size", opts->size,
                  "Data-set size: users (webservice, default 10000), records (wiredtiger, default 20000),\n"
                  "seconds of 120 Hz readings (btrdb, default 600)")
      ->check(Within(1, kMaxCount));
  cmd->add_option("--workload", opts->workload, "webservice: YCSB workload A, B or C")->capture_default_str();
  cmd->add_option("--distribution", opts->distribution, "webservice: zipfian or uniform keys")->capture_default_str();
  cmd->add_option("--chain-length", opts->chain_length,
                  "webservice: users per bucket (e.g. 100: the high-load-factor variant; 0: one bucket per user)")
      ->capture_default_str()
      ->check(Within(1, 1e6));
  cmd->add_option("--seconds", opts->seconds, "Length of the measured closed-loop phase")->capture_default_str()
      ->check(Within(0.001, 86400));
  cmd->add_option("--warmup", opts->warmup_ops, "Unmeasured requests first")->capture_default_str()
      ->check(Within(0, kMaxCount));
  cmd->add_option("--concurrency", opts->concurrency, "Closed-loop clients (threads, each with its own Client and its own copy of the data);\n"
                  "several drive the memory nodes towards saturation")->capture_default_str()
      ->check(Within(1, 1024));
  cmd->add_option("--rate", opts->rate, "Also run open-loop at this many requests per second")->capture_default_str()
      ->check(Within(0, 1e9));
  cmd->add_option("--mode", *mode, "Where traversals run: offload (always on the memory nodes), auto (the dispatch rule:\n"
                  "offload iff t_i * N < eta * t_d; see offload_fraction), cpu (at the CPU node)")->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Seed of data and requests")->capture_default_str();
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports for the nodes and the client (default: UCX_TLS)");
  cmd->add_option("--run-dir", opts->run_dir, "Where a started cluster writes its logs");
  cmd->add_option("--scan-length", opts->scan_length, "wiredtiger: records per scan (0: YCSB E's uniform 1..100)")
      ->capture_default_str()
      ->check(Within(0, 1e6));
  cmd->add_option("--allocation", opts->allocation, "wiredtiger: uniform (round robin) or partitioned (>= 2 nodes)")
      ->capture_default_str();
  cmd->add_option("--insert-fraction", opts->insert_fraction, "webservice: fraction of requests adding a new user")
      ->capture_default_str()
      ->check(Within(0, 1));
  cmd->add_option("--offload-alloc", opts->offload_alloc,
                  "webservice inserts: carry pre-allocated regions (true) or return to the CPU node to allocate")
      ->capture_default_str();
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->add_option("--cache-fraction", opts->cache_fraction,
                  "cache, cache-rpc: the CPU-node cache's size as a fraction of the working set")
      ->capture_default_str()
      ->check(Within(0, 1));
  cmd->add_option("--cache-policy", opts->cache_policy, "cache: page eviction, lru or clock")
      ->capture_default_str()
      ->check(CLI::IsMember({"lru", "clock"}));
  cmd->add_option("--rpc-path", opts->rpc_path,
                  "rpc, rpc-wimpy, cache-rpc: direct (CPU node <-> memory node, as pulse's direct routing) or\n"
                  "switch (requests cross the switch process, as in a rack); docs/rpc.md")
      ->capture_default_str()
      ->check(CLI::IsMember({"switch", "direct"}));
  cmd->add_option("--routing", opts->routing,
                  "The started cluster's routing: direct (the default) or switch (every traversal message\n"
                  "through the switch, the paper's topology); docs/architecture.md section 6")
      ->check(CLI::IsMember({"switch", "direct"}));
  AddFabricFlags(cmd, &opts->fabric);
  cmd->add_option("--node-poll-window-us", opts->node_poll_window_us,
                  "Adaptive polling window of the started cluster's nodes (0: they sleep at once)")
      ->capture_default_str();
  cmd->add_option("--node-poll-when-core-idle", opts->node_poll_when_core_idle,
                  "The nodes poll within their window only while at most one thread waits for a CPU (the\n"
                  "idle-core rule, docs/cluster.md)")
      ->capture_default_str()
      ->type_name("true|false");
  cmd->add_option("--client-poll-when-core-idle", opts->client_poll_when_core_idle,
                  "The clients' window under the idle-core rule too")
      ->capture_default_str()
      ->type_name("true|false");
  cmd->add_option("--client-poll-window-us", opts->client_poll_window_us,
                  "Adaptive polling window of the clients after traffic")
      ->capture_default_str();
  cmd->add_option("--client-awaiting-poll-window-us", opts->client_awaiting_poll_window_us,
                  "The clients' window while they await replies (0: the window above throughout)")
      ->capture_default_str()
      ->check(CLI::Range(0u, net::kMaxAwaitingPollWindowUs));
  cmd->add_option("--rpc-core-ghz", opts->rpc_core_ghz, "rpc-wimpy: the emulated wimpy core's clock (GHz)")
      ->capture_default_str()
      ->check(Within(0.001, 65));
  cmd->callback([opts, json, mode] {
    if (*mode == "offload") {
      opts->mode = ExecutionMode::kOffload;
    } else if (*mode == "cpu") {
      opts->mode = ExecutionMode::kCpuNode;
    } else if (*mode != "auto") {
      std::cerr << "bench app: --mode must be auto, offload or cpu\n";
      throw CLI::RuntimeError(1);
    }
    opts->progress = [](const std::string& line) { std::cerr << "[bench app] " << line << std::endl; };
    auto r = bench::RunAppBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench app: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    RequireWorkDone("bench app", r->closed.ops, "the closed-loop phase's operations");
    if (r->has_open) RequireWorkDone("bench app", r->open.ops, "the open-loop phase's operations");
    const nlohmann::json j = bench::AppBenchJson(*opts, *r);
    if (*json) {
      std::cout << j.dump(2) << std::endl;
      return;
    }
    for (const auto& [k, v] : j.items()) std::cout << fmt::format("{:<20} {}\n", k, v.dump());
  });
}

}  // namespace pulse::tools
