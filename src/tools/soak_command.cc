// pulse bench soak: a long mixed read/write workload on the data-structure
// library with faults injected, checked against std:: shadows
// (src/bench/soak.h).  Progress on stderr, one JSON summary on stdout; exit
// status 1 if an invariant was violated (or the soak could not run).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "bench/soak.h"
#include "tools/commands.h"
#include "tools/nothing_ran.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

nlohmann::json SoakJson(const bench::SoakResult& r) {
  const ClientCounters& c = r.client;
  return {{"seconds", r.seconds},
          {"ops", r.ops},
          {"ops_per_second", r.seconds > 0 ? r.ops / r.seconds : 0.0},
          {"ops_by_kind", r.ops_by_kind},
          {"errors_by_kind", r.errors_by_kind},
          {"unacknowledged_writes", r.unacknowledged_writes},
          {"restarts", r.restarts},
          {"switch_detect_ms", r.switch_detect_ms},
          {"client",
           {{"traversals", c.traversals},
            {"requests_sent", c.requests_sent},
            {"retransmissions", c.retransmissions},
            {"timeouts", c.timeouts},
            {"reissues", c.reissues},
            {"stale_responses", c.stale_responses},
            {"unavailable_resends", c.unavailable_resends},
            {"reconnections", c.reconnections}}},
          {"faults_injected", {{"client", r.client_faults_injected}, {"nodes", r.node_faults_injected}}},
          {"keys_checked", r.keys_checked},
          {"outcome_unknown", r.outcome_unknown},
          {"tree", {{"half_done_updates", r.tree_half_done}, {"validations", r.tree_validations}}},
          {"memnodes",
           {{"duplicates", r.node_duplicates},
            {"durable_answers", r.node_durable_answers},
            {"outcome_unknown", r.node_outcome_unknown}}},
          {"invariants_ok", r.invariants_ok},
          {"violations", r.violations},
          {"switch_address", r.switch_address},
          {"own_cluster", r.own_cluster}};
}

}  // namespace

void AddSoakBench(CLI::App& bench) {
  auto o = std::make_shared<bench::SoakOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "soak",
      "Mixed read/write workload on UnorderedMap, BTree and List with std:: shadows, with message loss,\n"
      "duplication and reordering injected and a memory node killed and restarted periodically; checks\n"
      "at the end that every acknowledged write is readable and every structure equals its shadow");
  cmd->add_option("--minutes", o->minutes, "How long the workload runs")->capture_default_str()
      ->check(Within(0.001, 1e6));
  cmd->add_option("--switch", o->switch_address,
                  "Join the cluster at this switch (HOST:PORT; no restarts then);\n"
                  "default: start a local cluster with faults injected into its nodes too");
  cmd->add_option("--memnodes", o->memnodes, "Memory nodes of a started cluster")
      ->capture_default_str()
      ->check(Within(1, 64));
  cmd->add_option("--faults", o->faults,
                  "Traversal-message faults, PULSE_NET_FAULTS syntax (loss=P,dup=P,reorder=P,hold_us=N,seed=N);\n"
                  "empty: none")
      ->capture_default_str();
  cmd->add_option("--restart-every-s", o->restart_every_s, "Kill a memory node this often (0: never)")
      ->capture_default_str()
      ->check(Within(0, 1e6));
  cmd->add_option("--down-s", o->down_s, "Restart it this much later")->capture_default_str()
      ->check(Within(0, 1e5));
  cmd->add_option("--structures", o->structures, "Structures to use (comma-separated): map, tree, list, counter (a far counter per\n"
                  "memory node incremented by an offloaded STORE-bearing program: exactly-once under\n"
                  "faults and restarts)")
      ->capture_default_str();
  cmd->add_option("--keys", o->keys, "Key space of the map and the tree")->capture_default_str()
      ->check(Within(1, 4294967296.0));
  cmd->add_option("--max-list", o->max_list, "Longest list")->capture_default_str()
      ->check(Within(1, 1e7));
  cmd->add_option("--seed", o->seed, "Seed of the workload")->capture_default_str();
  cmd->add_option("--progress-every-s", o->progress_every_s, "Seconds between progress lines")->capture_default_str()
      ->check(Within(0.001, 1e5));
  cmd->add_option("--run-dir", o->run_dir, "Where a started cluster writes its logs (default: $PULSE_RUN_DIR or run)");
  cmd->callback([o] {
    o->progress = [](const std::string& line) { std::cerr << "[bench soak] " << line << std::endl; };
    auto r = bench::RunSoak(*o);
    if (!r.ok()) {
      std::cerr << "bench soak: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    RequireWorkDone("bench soak", r->ops, "the number of operations");
    nlohmann::json j = SoakJson(*r);
    j["structures"] = o->structures;
    j["faults"] = o->faults;
    std::cout << j.dump(2) << std::endl;
    if (!r->invariants_ok) {
      std::cerr << "bench soak: invariants violated\n";
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace pulse::tools
