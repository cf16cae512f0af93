// pulse bench dlrm: the embedding reduction, offloaded and gathered
// one-sidedly, side by side (src/bench/dlrm_bench.h).  Prints one JSON object
// (--json) or a summary; exits 1 if any answer differs from the reference.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/dlrm_bench.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"
#include "tools/nothing_ran.h"

namespace pulse::tools {

void AddDlrmBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::DlrmBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "dlrm", "DLRM embedding reduction (seed 002 IV-C): int8 embedding tables in far memory, each query a bag of\n"
              "row indices per table (synthetic: Zipf or uniform), reduced near memory by offloaded traversals and,\n"
              "as the baseline, gathered row by row with one-sided reads and reduced at the CPU node; every answer\n"
              "of both is checked against a plain reference (exit 1 on a mismatch)");
  cmd->add_option("--tables", opts->tables, "Embedding tables")->capture_default_str()->check(Within(1, 1024));
  cmd->add_option("--rows", opts->rows, "Rows per table")->capture_default_str()->check(Within(1, kMaxCount));
  cmd->add_option("--dim", opts->dim, "Embedding dimension")->capture_default_str()->check(Within(1, 4096));
  cmd->add_option("--lookups", opts->lookups, "Indices per table per query")->capture_default_str()
      ->check(Within(1, 1e6));
  cmd->add_option("--distribution", opts->distribution, "Indices: zipf (theta 0.99, row 0 hottest) or uniform")
      ->capture_default_str()
      ->check(CLI::IsMember({"zipf", "uniform"}));
  cmd->add_option("--reduction", opts->reduction, "sum, max or min")->capture_default_str()
      ->check(CLI::IsMember({"sum", "max", "min"}));
  cmd->add_option("--concurrency", opts->concurrency, "Closed-loop clients (threads, each with its own Client)")
      ->capture_default_str()
      ->check(Within(1, 64));
  cmd->add_option("--chunks-per-traversal", opts->chunks_per_traversal,
                  "Row chunks one offloaded traversal walks (1-64): fewer = more loads in flight per query")
      ->capture_default_str()
      ->check(Within(1, 64));
  cmd->add_option("--max-in-flight", opts->max_in_flight,
                  "Traversals of one query in flight at once (each completion starts the next)")
      ->capture_default_str()
      ->check(Within(1, 4096));
  cmd->add_option("--seconds", opts->seconds, "Measured phase per system")->capture_default_str()
      ->check(Within(0.001, 86400));
  cmd->add_option("--warmup", opts->warmup_queries, "Unmeasured queries per client and system first")
      ->capture_default_str()
      ->check(Within(0, kMaxCount));
  cmd->add_option("--memory-nodes", opts->memory_nodes, "Memory nodes of the started cluster")
      ->capture_default_str()
      ->check(Within(1, 64));
  cmd->add_option("--seed", opts->seed, "Seed of rows and queries")->capture_default_str();
  cmd->add_option("--switch", opts->switch_address, "Join the cluster at this switch instead of starting one");
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports for the nodes and the clients (default: UCX_TLS)");
  cmd->add_option("--run-dir", opts->run_dir, "Where a started cluster writes its logs");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench dlrm] " << line << std::endl; };
    auto r = bench::RunDlrmBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench dlrm: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    for (const auto& s : r->systems) RequireWorkDone("bench dlrm", s.queries, s.system + "'s queries");
    const nlohmann::json j = bench::DlrmBenchJson(*opts, *r);
    if (*json) {
      std::cout << j.dump(2) << std::endl;
    } else {
      for (const auto& [k, v] : j.items()) std::cout << fmt::format("{:<32} {}\n", k, v.dump());
    }
    if (const uint64_t bad = bench::DlrmMismatches(*r); bad > 0) {
      std::cerr << "bench dlrm: " << bad << " answer(s) differ from the reference\n";
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace pulse::tools
