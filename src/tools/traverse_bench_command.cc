// pulse bench traverse: the cluster's request path, pulse against pulse-acc
// (src/bench/traverse_bench.h).  Prints one JSON object (--json) or a table.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/traverse_bench.h"
#include "tools/commands.h"
#include "tools/nothing_ran.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

nlohmann::json ResultJson(const bench::TraverseBenchResult& r) {
  const double offload_ratio = r.offload_rtt.p50_us / r.raw_rtt.p50_us;
  const double pulse_ratio = r.pulse.mean_us / r.pulse_acc.mean_us;
  return {
      {"raw_rtt_us", r.raw_rtt.p50_us},
      {"offload_rtt_us", r.offload_rtt.p50_us},
      {"pulse_us", r.pulse.mean_us},
      {"pulse_acc_us", r.pulse_acc.mean_us},
      {"offload_vs_raw", offload_ratio},
      {"pulse_vs_pulse_acc", pulse_ratio},
      {"pulse_vs_pulse_acc_p50", r.pulse.p50_us / r.pulse_acc.p50_us},
      {"targets",
       {{"offload_vs_raw_max", 1.3},
        {"pulse_vs_pulse_acc_max", 0.75},
        {"offload_vs_raw_met", offload_ratio <= 1.3},
        {"pulse_vs_pulse_acc_met", pulse_ratio <= 0.75}}},
      {"raw_rtt", bench::LatencyJson(r.raw_rtt)},
      {"offload_rtt", bench::LatencyJson(r.offload_rtt)},
      {"pulse", bench::LatencyJson(r.pulse)},
      {"pulse_acc", bench::LatencyJson(r.pulse_acc)},
      {"hops", r.hops},
      {"hops_per_node", r.hops_per_node},
      {"node_crossings", r.node_crossings},
      {"lists", r.lists},
      {"memory_nodes", r.memory_nodes},
      {"verified_traversals", r.verified},
      {"switch_forwards", r.switch_forwards},
      {"continuations", r.continuations},
      {"expected_continuations", r.expected_forwards},
      {"client_reissues", r.client_reissues},
      {"retransmissions", r.retransmissions},
      {"switch_address", r.switch_address},
      {"own_cluster", r.own_cluster},
      {"ucx_tls", r.transport.empty() ? "(UCX's choice)" : r.transport},
      {"load_average_1m", r.load_average},
  };
}

}  // namespace

void AddTraverseBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::TraverseBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "traverse",
      "Request path of a 2-memory-node cluster: no-op round trip, one-iteration traversal, and a\n"
      "64-hop list crossing between the nodes every 8 hops in pulse and pulse-acc mode");
  cmd->add_option("--switch", opts->switch_address,
                  "Join the cluster at this switch (HOST:PORT; uses its memory nodes 0 and 1);\n"
                  "default: start a local cluster of two memory nodes on free ports");
  cmd->add_option("--hops", opts->hops, "Nodes per list")->capture_default_str()
      ->check(Within(2, 1 << 20));
  cmd->add_option("--hops-per-node", opts->hops_per_node, "Consecutive list nodes on one memory node")
      ->capture_default_str()
      ->check(Within(1, 1 << 20));
  cmd->add_option("--lists", opts->lists, "Distinct lists, visited in turn")->capture_default_str()
      ->check(Within(1, 4096));
  cmd->add_option("--samples", opts->samples, "Measured requests per figure")->capture_default_str()
      ->check(Within(1, kMaxCount));
  cmd->add_option("--rounds", opts->rounds, "Interleaved rounds the samples are split into")
      ->capture_default_str()
      ->check(Within(1, 1000));
  cmd->add_option("--warmup", opts->warmup, "Unmeasured requests per figure and round")->capture_default_str()
      ->check(Within(0, kMaxCount));
  cmd->add_option("--poll-window-us", opts->poll_window_us, "Adaptive polling window of the nodes and the client")
      ->capture_default_str()
      ->check(Within(0, kMaxPollWindowUs));
  cmd->add_option("--poll-when-core-idle", opts->poll_when_core_idle,
                  "Nodes and client poll within the window only while at most one thread waits for a CPU\n"
                  "(the idle-core rule, docs/cluster.md)")
      ->capture_default_str()
      ->type_name("true|false");
  cmd->add_flag("--busy-poll", opts->busy_poll, "Nodes and client never sleep (dedicated cores only)");
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports for the nodes and the client (default: UCX_TLS)");
  cmd->add_option("--run-dir", opts->run_dir, "Where a started cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench traverse] " << line << std::endl; };
    auto r = bench::RunTraverseBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench traverse: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    RequireWorkDone("bench traverse", r->verified, "the number of checked traversals");
    if (*json) {
      nlohmann::json j = ResultJson(*r);
      j["poll_window_us"] = opts->poll_window_us;
      j["poll_when_core_idle"] = opts->poll_when_core_idle;
      std::cout << j.dump(2) << std::endl;
      return;
    }
    std::cout << fmt::format("{:<13} {:>9} {:>9} {:>9} {:>7}\n", "figure", "mean us", "p50 us", "p99 us", "count");
    auto row = [](const char* name, const bench::LatencyStats& s) {
      std::cout << fmt::format("{:<13} {:>9.1f} {:>9.1f} {:>9.1f} {:>7}\n", name, s.mean_us, s.p50_us, s.p99_us, s.count);
    };
    row("raw_rtt", r->raw_rtt);
    row("offload_rtt", r->offload_rtt);
    row("pulse", r->pulse);
    row("pulse_acc", r->pulse_acc);
    std::cout << fmt::format("offload/raw (p50)  {:.2f}  (target <= 1.3)\npulse/pulse-acc    {:.2f}  (target <= 0.75)\n",
                             r->offload_rtt.p50_us / r->raw_rtt.p50_us, r->pulse.mean_us / r->pulse_acc.mean_us);
  });
}

}  // namespace pulse::tools
