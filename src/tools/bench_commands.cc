// pulse bench <engine | ...>: benchmarks print one JSON object (--json) or a
// short table, with progress on stderr.
#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/engine_bench.h"
#include "net/net_bench.h"
#include "pulse/calibration.h"
#include "tools/commands.h"

namespace pulse::tools {
namespace {

void AddEngineBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::EngineBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "engine",
      "Engine on one core vs a plain run-to-completion chase vs a prefetch-interleaved chase\n"
      "of the same randomly permuted linked list (hops/s, medians of --rounds runs)");
  cmd->add_option("--size-gib", opts->size_gib, "List size in GiB")->capture_default_str();
  cmd->add_option("--node-bytes", opts->node_bytes, "Bytes per list node")->capture_default_str();
  cmd->add_option("--hops", opts->hops_per_request, "Hops per traversal request")->capture_default_str();
  cmd->add_option("--workspaces", opts->workspaces, "Engine workspaces (and chains of the interleaved chase)")
      ->capture_default_str();
  cmd->add_option("--seconds", opts->seconds, "Seconds per measurement")->capture_default_str();
  cmd->add_option("--rounds", opts->rounds, "Measurements per figure (the median is reported)")
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Seed of the list permutation")->capture_default_str();
  cmd->add_option("--pipelines", opts->pipelines,
                  "Also measure this many engine pipelines, one thread each (memory pipelines of one node)")
      ->capture_default_str();
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench engine] " << line << std::endl; };
    auto r = bench::RunEngineBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench engine: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    nlohmann::json j = {
        {"engine_hops_per_sec", r->engine_hops_per_sec},
        {"native_hops_per_sec", r->native_hops_per_sec},
        {"mlp_limit_hops_per_sec", r->mlp_limit_hops_per_sec},
        {"engine_vs_limit", r->engine_hops_per_sec / r->mlp_limit_hops_per_sec},
        {"engine_vs_native", r->engine_hops_per_sec / r->native_hops_per_sec},
        {"nodes", r->nodes},
        {"node_bytes", r->node_bytes},
        {"workspaces", r->workspaces},
        {"instructions_per_iteration", r->instructions_per_iteration},
        {"window_bytes", r->window_bytes},
        {"huge_page_bytes", r->huge_page_bytes},
        {"build_seconds", r->build_seconds},
        {"checked_requests", r->checked_requests},
    };
    if (r->pipelines > 1) {
      j["pipelines"] = r->pipelines;
      j["engine_all_pipelines_hops_per_sec"] = r->engine_all_pipelines_hops_per_sec;
    }
    if (*json) {
      std::cout << j.dump(2) << std::endl;
    } else {
      std::cout << fmt::format(
          "engine        {:>8.2f} M hops/s\nnative        {:>8.2f} M hops/s\ninterleaved   {:>8.2f} M hops/s\n"
          "engine/limit  {:>8.2f}\nengine/native {:>8.2f}\n",
          r->engine_hops_per_sec / 1e6, r->native_hops_per_sec / 1e6, r->mlp_limit_hops_per_sec / 1e6,
          r->engine_hops_per_sec / r->mlp_limit_hops_per_sec,
          r->engine_hops_per_sec / r->native_hops_per_sec);
    }
  });
}

void AddCalibrateBench(CLI::App& bench) {
  auto mib = std::make_shared<uint64_t>(64);
  auto workspaces = std::make_shared<uint32_t>(16);
  CLI::App* cmd = bench.add_subcommand(
      "calibrate", "Measure the engine's t_i (ns per instruction) and t_d (ns per window load) for the offload rule");
  cmd->add_option("--mib", *mib, "Size of the list the calibration chases")->capture_default_str();
  cmd->add_option("--workspaces", *workspaces, "Engine workspaces")->capture_default_str();
  cmd->callback([mib, workspaces] {
    auto c = CalibrateEngine(*mib << 20, *workspaces);
    if (!c.ok()) {
      std::cerr << "bench calibrate: " << c.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    nlohmann::json j = {{"t_i_ns", c->t_i_ns}, {"t_d_ns", c->t_d_ns}, {"workspaces", c->workspaces}};
    std::cout << j.dump(2) << std::endl;
  });
}

void AddNetBench(CLI::App& bench) {
  auto opts = std::make_shared<net::NetBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "net",
      "Active-message ping-pong between two processes for each adaptive poll window (and busy\n"
      "polling): one-way latency back to back and paced, CPU per message, idle CPU (JSON)");
  cmd->add_option("--payload", opts->payload_bytes, "Payload bytes per message")->capture_default_str();
  cmd->add_option("--iterations", opts->iterations, "Back-to-back round trips per configuration")
      ->capture_default_str();
  cmd->add_option("--paced-iterations", opts->paced_iterations, "Paced round trips per configuration")
      ->capture_default_str();
  cmd->add_option("--paced-gap-us", opts->paced_gap_us, "Idle time between paced round trips")->capture_default_str();
  cmd->add_option("--windows", opts->windows_us, "Poll windows to measure in microseconds (-1: busy polling)")
      ->capture_default_str();
  cmd->add_option("--transports", opts->transports, "UCX transports for both sides (default: UCX's choice)");
  cmd->callback([opts] {
    if (net::RunNetBench(*opts) != 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace

void AddBenchCommands(CLI::App& bench) {
  AddEngineBench(bench);
  AddCalibrateBench(bench);
  AddNetBench(bench);
  AddTraverseBench(bench);
  AddRpcBench(bench);
  AddDsBench(bench);
  AddAppBench(bench);
  AddSuiteBench(bench);
  AddSoakBench(bench);
  AddRespBench(bench);
}

}  // namespace pulse::tools
