// pulse bench graph: the graph applications on graph files, on each system
// (src/bench/graph_bench.h).  Progress on stderr; one JSON object (--json)
// or a table on stdout.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/graph_bench.h"
#include "bench/graph_counters.h"
#include "tools/commands.h"

namespace pulse::tools {

void AddGraphBench(CLI::App& bench) {
  auto opts = std::make_shared<bench::GraphBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = bench.add_subcommand(
      "graph", "Graph applications (seed 003) on graph files, per system: run time, host memory and CPU,\n"
               "memory-node traffic and cache hits, answers verified against the in-memory run");
  cmd->add_option("--app", opts->apps, "Applications: bfs, pagerank, radii, bc, cc")->delimiter(',')->capture_default_str();
  cmd->add_option("--graph", opts->graphs, "Graph files (pulse graph gen; scripts/graphs.sh)")->delimiter(',')->required();
  cmd->add_option("--system", opts->systems, "Systems: local, memserver, proxy, agent, ssd, offload (bfs only: neighbour scans at the memory nodes)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--symmetric,-s", opts->symmetric, "Text graphs are symmetric (Ligra's -s)");
  cmd->add_option("--threads", opts->threads, "Worker threads")->capture_default_str()->check(CLI::Range(1u, 256u));
  cmd->add_option("--root", opts->root, "BFS and BC source (0: the vertex of highest degree)")->capture_default_str();
  cmd->add_option("--pagerank-iterations", opts->pagerank_iterations, "PageRank iterations (fixed)")
      ->capture_default_str();
  cmd->add_option("--radii-seed", opts->radii_seed, "Seed of Radii's sampled sources")->capture_default_str();
  cmd->add_option("--buffer-mib", opts->buffer_bytes, "Far systems: the host's page buffer in MiB (0: a quarter of the CSR)")
      ->transform([](std::string s) { return std::to_string(std::stoull(s) << 20); });
  cmd->add_option("--page-kib", opts->page_bytes, "Far systems: page size in KiB")
      ->transform([](std::string s) { return std::to_string(std::stoull(s) << 10); });
  cmd->add_option("--switch", opts->switch_address, "Far systems: join this cluster instead of starting one");
  cmd->add_option("--agent", opts->agent_address, "proxy, agent: the address of `pulse agent`");
  cmd->add_option("--agent-flags", opts->agent_flags,
                  "Without --switch: the started cluster also runs `pulse agent` with these flags (e.g. \"--mode proxy\"); "
                  "default: \"--mode proxy\" for --system proxy, \"--mode agent\" for --system agent (not both at once)");
  cmd->add_option("--proxy-agent", opts->proxy_agent_address,
                  "proxy: the address of a `pulse agent --mode proxy` (default: --agent)");
  cmd->add_option("--ucx-tls", opts->ucx_tls, "UCX transports of a started cluster (default: UCX_TLS)");
  cmd->add_option("--run-dir", opts->run_dir, "Where a started cluster writes its logs");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([opts, json] {
    opts->progress = [](const std::string& line) { std::cerr << "[bench graph] " << line << std::endl; };
    auto r = bench::RunGraphBench(*opts);
    if (!r.ok()) {
      std::cerr << "bench graph: " << r.status().ToString() << "\n";
      throw CLI::RuntimeError(1);
    }
    // Any failed or unverified result makes the exit status 1 (after the
    // report is printed).
    const std::vector<std::string> failures = bench::GraphBenchFailures(*r);
    auto finish = [&failures] {
      for (const std::string& f : failures) std::cerr << "bench graph: failed: " << f << "\n";
      if (!failures.empty()) throw CLI::RuntimeError(1);
    };
    if (*json) {
      std::cout << r->dump(2) << std::endl;
      return finish();
    }
    std::cout << fmt::format("{:<24} {:<10} {:<9} {:>9} {:>10} {:>8} {}\n", "graph", "system", "app", "seconds",
                             "peak MiB", "cpu s", "verified");
    for (const auto& x : (*r)["results"]) {
      if (x.contains("error")) {
        std::cout << fmt::format("{:<24} {:<10} {:<9} error: {}\n", x["graph"].get<std::string>(),
                                 x["system"].get<std::string>(), x["app"].get<std::string>(), x["error"].get<std::string>());
        continue;
      }
      std::cout << fmt::format("{:<24} {:<10} {:<9} {:>9.3f} {:>10.1f} {:>8.2f} {}\n", x["graph"].get<std::string>(),
                               x["system"].get<std::string>(), x["app"].get<std::string>(), x["seconds"].get<double>(),
                               x["host_peak_rss_bytes"].get<double>() / 1048576.0, x["host_cpu_seconds"].get<double>(),
                               x["verified"].get<bool>());
    }
    finish();
  });
}

}  // namespace pulse::tools
