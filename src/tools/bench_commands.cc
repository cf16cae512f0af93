// pulse bench <engine | ...>: benchmarks print one JSON object (--json) or a
// short table, with progress on stderr.
#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/cxl_bench.h"
#include "bench/engine_bench.h"
#include "bench/net_bench.h"
#include "pulse/calibration.h"
#include "tools/commands.h"
#include "tools/nothing_ran.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

void AddEngineBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::EngineBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "engine",
      "Engine on one core vs a plain run-to-completion traversal of the same randomly placed structure\n"
      "(and, for the list, a prefetch-interleaved chase), over a sweep of workspace counts\n"
      "(hops/s, medians of --rounds runs)");
  auto engine_name = std::make_shared<std::string>(std::string(EngineKindName(DefaultEngineKind())));
  opts->sweep = {16, 32, 64, 128};
  cmd->add_option("--size-gib", opts->size_gib, "List size in GiB")->capture_default_str()
      ->check(Within(0.0001, 1024));
  cmd->add_option("--node-bytes", opts->node_bytes, "Bytes per list node")->capture_default_str()
      ->check(Within(16, 1 << 20));
  cmd->add_option("--hops", opts->hops_per_request, "Hops per traversal request")->capture_default_str()
      ->check(Within(1, 1e9));
  CLI::Option* workspaces =
      cmd->add_option("--workspaces", opts->workspaces, "Measure only this many engine workspaces (and chains)")
      ->check(Within(1, 4096));
  cmd->add_option("--sweep", opts->sweep, "Workspace counts to measure (engine and limit at each)")
      ->delimiter(',')
      ->capture_default_str()
      ->excludes(workspaces)
      ->check(Within(1, 4096));
  cmd->add_option("--active-workspaces", opts->active_workspaces,
                  fmt::format("Traversals the engine interleaves at once (its active set; the rest wait); "
                              "0: auto ({} for the JIT, every workspace for the interpreter)",
                              kJitActiveWorkspaces))
      ->capture_default_str()
      ->check(Within(0, 4096));
  cmd->add_option("--engine", *engine_name, "interp or jit (jit: the interpreter is measured too, at every count)")
      ->check(CLI::IsMember({"interp", "jit"}))
      ->capture_default_str();
  cmd->add_option("--program", opts->program,
                  "list (walk --hops nodes), hash (find in chains of 8) or btree (lower_bound, 256-byte nodes)")
      ->check(CLI::IsMember({"list", "hash", "btree"}))
      ->capture_default_str();
  cmd->add_option("--seconds", opts->seconds, "Seconds per measurement")->capture_default_str()
      ->check(Within(0.001, 86400));
  cmd->add_flag("--cpu-clock", opts->thread_cpu_clock,
               "Time each measurement by the measuring thread's CPU time (hops per CPU second: on a loaded machine)");
  cmd->add_option("--rounds", opts->rounds, "Measurements per figure (the median is reported)")
      ->capture_default_str()
      ->check(Within(1, 1000));
  cmd->add_option("--seed", opts->seed, "Seed of the list permutation")->capture_default_str();
  cmd->add_option("--pipelines", opts->pipelines,
                  "Also measure this many engine pipelines, one thread each (memory pipelines of one node)")
      ->capture_default_str()
      ->check(Within(1, 256));
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json, workspaces, engine_name] {
    if (workspaces->count() > 0) opts->sweep = {opts->workspaces};
    opts->engine = *EngineKindFromName(*engine_name);
    opts->progress = [](const std::string& line) { std::cerr << "[bench engine] " << line << std::endl; };
    auto r = bench::RunEngineBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench engine: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    RequireWorkDone("bench engine", r->checked_requests, "the number of checked requests");
    auto ratio = [](double a, double b) { return b > 0 ? nlohmann::json(a / b) : nlohmann::json(nullptr); };
    nlohmann::json sweep = nlohmann::json::array();
    for (const auto& p : r->sweep)
      sweep.push_back({{"workspaces", p.workspaces},
                       {"active_workspaces", p.active_workspaces},
                       {"engine_hops_per_sec", p.engine_hops_per_sec},
                       {"mlp_limit_hops_per_sec", p.mlp_limit_hops_per_sec > 0 ? nlohmann::json(p.mlp_limit_hops_per_sec)
                                                                               : nlohmann::json(nullptr)},
                       {"interpreter_hops_per_sec", p.interpreter_hops_per_sec > 0
                                                        ? nlohmann::json(p.interpreter_hops_per_sec)
                                                        : nlohmann::json(nullptr)},
                       {"interpreter_active_workspaces", p.interpreter_active_workspaces > 0
                                                             ? nlohmann::json(p.interpreter_active_workspaces)
                                                             : nlohmann::json(nullptr)}});
    nlohmann::json j = {
        {"engine_hops_per_sec", r->engine_hops_per_sec},
        {"native_hops_per_sec", r->native_hops_per_sec},
        {"mlp_limit_hops_per_sec", r->mlp_limit_hops_per_sec > 0 ? nlohmann::json(r->mlp_limit_hops_per_sec)
                                                                  : nlohmann::json(nullptr)},
        {"engine_vs_limit", ratio(r->engine_hops_per_sec, r->mlp_limit_hops_per_sec)},
        {"engine_vs_native", ratio(r->engine_hops_per_sec, r->native_hops_per_sec)},
        {"engine", r->engine},
        {"program", r->program},
        {"sweep", sweep},
        {"mlp_limit_workspaces", r->mlp_limit_workspaces},
        {"ns_per_iteration", r->ns_per_iteration},
        {"jit_compile_us", r->jit_compile_us},
        {"interpreter_hops_per_sec", r->interpreter_hops_per_sec > 0 ? nlohmann::json(r->interpreter_hops_per_sec)
                                                                      : nlohmann::json(nullptr)},
        {"engine_vs_interpreter", ratio(r->engine_hops_per_sec, r->interpreter_hops_per_sec)},
        {"hops_per_request", r->hops_per_request},
        {"nodes", r->nodes},
        {"node_bytes", r->node_bytes},
        {"workspaces", r->workspaces},
        {"instructions_per_iteration", r->instructions_per_iteration},
        {"window_bytes", r->window_bytes},
        {"huge_page_bytes", r->huge_page_bytes},
        {"build_seconds", r->build_seconds},
        {"checked_requests", r->checked_requests},
        {"clock", opts->thread_cpu_clock ? "thread_cpu" : "wall"},
    };
    if (r->pipelines > 1) {
      j["pipelines"] = r->pipelines;
      j["engine_all_pipelines_hops_per_sec"] = r->engine_all_pipelines_hops_per_sec;
    }
    if (*json) {
      std::cout << j.dump(2) << std::endl;
    } else {
      std::cout << fmt::format("{} on the {} engine ({} workspaces best), {:.1f} ns/iteration, jit compile {:.1f} us\n",
                               r->program, r->engine, r->workspaces, r->ns_per_iteration, r->jit_compile_us);
      for (const auto& p : r->sweep)
        std::cout << fmt::format("  {:>4} workspaces: engine {:>8.2f}  interpreter {:>8.2f}  limit {:>8.2f} M hops/s\n",
                                 p.workspaces, p.engine_hops_per_sec / 1e6, p.interpreter_hops_per_sec / 1e6,
                                 p.mlp_limit_hops_per_sec / 1e6);
      std::cout << fmt::format(
          "engine        {:>8.2f} M hops/s\nnative        {:>8.2f} M hops/s\ninterleaved   {:>8.2f} M hops/s\n"
          "interpreter   {:>8.2f} M hops/s\nengine/limit  {:>8.2f}\nengine/native {:>8.2f}\n",
          r->engine_hops_per_sec / 1e6, r->native_hops_per_sec / 1e6, r->mlp_limit_hops_per_sec / 1e6,
          r->interpreter_hops_per_sec / 1e6,
          r->mlp_limit_hops_per_sec > 0 ? r->engine_hops_per_sec / r->mlp_limit_hops_per_sec : 0.0,
          r->engine_hops_per_sec / r->native_hops_per_sec);
    }
  });
}

void AddCalibrateBench(CLI::App& bench) {
  auto mib = std::make_shared<uint64_t>(64);
  auto workspaces = std::make_shared<uint32_t>(16);
  CLI::App* cmd = bench.add_subcommand(
      "calibrate", "Measure the engine's t_i (ns per instruction) and t_d (ns per window load) for the offload rule");
  cmd->add_option("--mib", *mib, "Size of the list the calibration chases")->capture_default_str()
      ->check(Within(1, 1 << 20));
  cmd->add_option("--workspaces", *workspaces, "Engine workspaces")->capture_default_str()->check(Within(1, 4096));
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
  cmd->add_option("--payload", opts->payload_bytes, "Payload bytes per message")->capture_default_str()
      ->check(Within(1, 1 << 26));
  cmd->add_option("--iterations", opts->iterations, "Back-to-back round trips per configuration")
      ->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--paced-iterations", opts->paced_iterations, "Paced round trips per configuration")
      ->capture_default_str()
      ->check(Within(0, kMaxCount));
  cmd->add_option("--paced-gap-us", opts->paced_gap_us, "Idle time between paced round trips")->capture_default_str()
      ->check(Within(0, 1e8));
  cmd->add_option("--windows", opts->windows_us, "Poll windows to measure in microseconds (-1: busy polling)")
      ->capture_default_str()
      ->check(Within(-1, kMaxPollWindowUs));
  cmd->add_option("--transports", opts->transports, "UCX transports for both sides (default: UCX's choice)");
  cmd->callback([opts] {
    if (net::RunNetBench(*opts) != 0) throw CLI::RuntimeError(1);
  });
}

// pulse bench cxl: the CXL model (src/bench/cxl_bench.h, docs/cxl.md).
void AddCxlBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::CxlBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "cxl",
      "pulse's CXL study, a model (seed 000 section 7; docs/cxl.md): captures each application's far\n"
      "accesses on a local cluster and prices them on local DRAM, CXL memory, and CXL memory with pulse\n"
      "(time per operation, slowdown vs local DRAM)");
  bench::CxlParams& p = opts->params;
  cmd->add_option("--app", opts->apps, "Applications: webservice, wiredtiger, btrdb (repeat or comma-separate)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--nodes", opts->nodes, "Memory nodes to price: 1 (no switch) and/or 4 (behind a CXL switch)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--size", opts->size, "Data-set size (users, records, seconds of readings); 0: quick default")
      ->capture_default_str()
      ->check(Within(0, kMaxCount));
  cmd->add_option("--chain-length", opts->chain_length, "webservice: users per bucket (0: one bucket per user)")
      ->capture_default_str()
      ->check(Within(0, 1e6));
  cmd->add_option("--slab-kib", opts->slab_kib, "The capture's allocation granularity (spreads data over the nodes)")
      ->capture_default_str()
      ->check(Within(1, 1 << 20));
  cmd->add_option("--ops", opts->ops, "Operations captured per application")->capture_default_str()->check(Within(2, 1e7));
  cmd->add_option("--warmup-ops", opts->warmup_ops, "Of those, the first ones only warm the caches")
      ->capture_default_str()
      ->check(Within(0, 1e7));
  cmd->add_option("--cache-mib", opts->cache_mib, "CPU-attached DRAM cache in MiB (0: --cache-fraction of the footprint)")
      ->capture_default_str()
      ->check(Within(0, 1 << 20));
  cmd->add_option("--cache-fraction", opts->cache_fraction, "The DRAM cache as a fraction of the trace's footprint")
      ->capture_default_str()
      ->check(Within(1e-6, 1));
  cmd->add_option("--l3-kib", opts->l3_kib, "L3 in KiB (0: 1/64 of the DRAM cache)")->capture_default_str()->check(Within(0, 1 << 30));
  cmd->add_option("--line-bytes", p.line_bytes, "Access granularity")->capture_default_str()->check(Within(8, 4096));
  cmd->add_option("--l3-ns", p.l3_ns, "L3 hit latency")->capture_default_str()->check(Within(0, 1e6));
  cmd->add_option("--dram-ns", p.dram_ns, "Local DRAM latency (CPU and memory node)")->capture_default_str()->check(Within(0, 1e6));
  cmd->add_option("--cxl-ns", p.cxl_ns, "CXL memory load latency without a switch")->capture_default_str()->check(Within(0, 1e6));
  cmd->add_option("--cxl-switch-ns", p.cxl_switch_ns, "Added by the CXL switch per round trip")
      ->capture_default_str()
      ->check(Within(0, 1e6));
  cmd->add_option("--pulse-stack-ns", p.pulse_stack_ns, "The accelerator's handling of one message")
      ->capture_default_str()
      ->check(Within(0, 1e6));
  cmd->add_option("--pulse-scheduler-ns", p.pulse_scheduler_ns, "The accelerator's scheduler per request")
      ->capture_default_str()
      ->check(Within(0, 1e6));
  cmd->add_option("--pulse-logic-ns", p.pulse_logic_ns, "Logic per iteration at the memory node")
      ->capture_default_str()
      ->check(Within(0, 1e6));
  cmd->add_option("--seed", opts->seed, "Seed of the applications' data and requests")->capture_default_str();
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports for the capture's cluster (default: UCX_TLS)");
  cmd->add_option("--run-dir", opts->run_dir, "Where the cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench cxl] " << line << std::endl; };
    auto r = bench::RunCxlBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench cxl: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    uint64_t priced = 0;
    for (const auto& row : r->rows) priced += row.model.ops;
    RequireWorkDone("bench cxl", priced, "the number of priced operations");
    if (*json) {
      std::cout << r->ToJson(*opts).dump(2) << std::endl;
      return;
    }
    std::cout << "A model, not a measurement (docs/cxl.md).\n";
    std::cout << fmt::format("{:<11} {:>5} {:>10} {:>10} {:>12} {:>9} {:>11} {:>12}\n", "app", "nodes", "local ns",
                             "cxl ns", "cxl+pulse ns", "cxl slow", "pulse slow", "native slow");
    for (const auto& row : r->rows)
      std::cout << fmt::format("{:<11} {:>5} {:>10.0f} {:>10.0f} {:>12.0f} {:>8.2f}x {:>10.2f}x {:>11.2f}x\n", row.app,
                               row.nodes, row.model.local_ns_per_op(), row.model.cxl_ns_per_op(),
                               row.model.pulse_ns_per_op(), row.model.cxl_slowdown(), row.model.pulse_slowdown(),
                               row.native.pulse_slowdown());
  });
}

}  // namespace

void AddBenchCommands(CLI::App& bench) {
  AddEngineBench(bench);
  AddCalibrateBench(bench);
  AddNetBench(bench);
  AddTraverseBench(bench);
  AddTierBench(bench);
  AddTierLocksBench(bench);
  AddYcsbBench(bench);
  AddRpcBench(bench);
  AddKvBench(bench);
  AddRingBench(bench);
  AddTxBench(bench);
  AddDsBench(bench);
  AddAppBench(bench);
  AddDlrmBench(bench);
  AddSuiteBench(bench);
  AddSoakBench(bench);
  AddRespBench(bench);
  AddGraphBench(bench);
  AddCxlBench(bench);
}

}  // namespace pulse::tools
