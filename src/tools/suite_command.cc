// pulse bench suite: the whole evaluation in one command (src/bench/suite.h).
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "bench/suite.h"
#include "cluster/launcher.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void Fail(const std::string& msg) {
  std::cerr << "bench suite: " << msg << "\n";
  throw CLI::RuntimeError(1);
}

// --size: "N" (every app) or "app=N,app=N".
std::map<std::string, uint64_t> ParseSizes(const std::string& spec, const std::vector<std::string>& apps) {
  std::map<std::string, uint64_t> out;
  for (const std::string& item : SplitList(spec)) {
    const size_t eq = item.find('=');
    try {
      if (eq == std::string::npos) {
        for (const std::string& app : apps) out[app] = std::stoull(item);
      } else {
        out[item.substr(0, eq)] = std::stoull(item.substr(eq + 1));
      }
    } catch (const std::exception&) {
      Fail(fmt::format("--size '{}': expected N or app=N[,app=N...]", item));
    }
  }
  return out;
}

// scripts/plot_suite.py of the source tree this binary was built in
// (build/bin/pulse -> scripts/), else of the working directory.
std::string DefaultPlotScript() {
  std::vector<std::filesystem::path> candidates;
  auto self = cluster::NodeBinary(cluster::ClusterConfig{});
  if (self.ok()) candidates.push_back(std::filesystem::path(*self).parent_path() / "../../scripts/plot_suite.py");
  candidates.push_back("scripts/plot_suite.py");
  for (const auto& c : candidates)
    if (std::filesystem::exists(c)) return std::filesystem::weakly_canonical(c).string();
  return "";
}

}  // namespace

void AddSuiteBench(CLI::App& bench) {
  struct Args {
    std::string out = "suite-out", apps, systems, nodes, regimes, studies, sizes, plot_script;
    double seconds = 0;
    uint32_t saturation_clients = 4;
    bool quick = false, no_plots = false;
    uint32_t graph_scale = 0;
    bench::FabricModel fabric;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = bench.add_subcommand(
      "suite", "The evaluation: applications x systems x memory nodes in the tcp and shm regimes, the sensitivity\n"
               "studies of seed 000 appendix C and pulse vs pulse-acc; writes results.json, report.md and plots\n"
               "(docs/evaluation.md)");
  cmd->add_option("--out", args->out, "Output directory")->capture_default_str();
  cmd->add_option("--apps", args->apps, "Comma-separated apps (default: webservice,wiredtiger,btrdb)");
  cmd->add_option("--systems", args->systems, "Comma-separated systems (default: every registered system)");
  cmd->add_option("--nodes", args->nodes, "Comma-separated memory-node counts (default 1,2,4; --quick 1,2)");
  cmd->add_option("--regimes", args->regimes, "Comma-separated transport regimes: tcp, shm (default both)");
  cmd->add_option("--studies", args->studies,
                  "Comma-separated studies (traversal_length, allocation, distribution, writes, saturation,\n"
                  "pipelines, pulse_vs_acc, graph, switch_routing, kv, dlrm, tx, cxl, ycsb), or none (default: all)");
  cmd->add_option("--saturation-clients", args->saturation_clients,
                  "The saturation study's closed-loop clients per run (bench app --concurrency)")
      ->capture_default_str()
      ->check(Within(1, 64));
  cmd->add_option("--seconds", args->seconds, "Measured phase of each run (default 3; --quick 1)")
      ->check(Within(0.001, 86400));
  cmd->add_option("--size", args->sizes,
                  "Data-set sizes as for bench app --size: N for every app, or app=N,... (default: bench app's)");
  cmd->add_option("--graph-scale", args->graph_scale,
                  "The graph study's R-MAT scale, 2^N vertices (default 16; the measurement: 18)")
      ->check(Within(8, 24));
  AddFabricFlags(cmd, &args->fabric);
  cmd->add_flag("--quick", args->quick, "Short phases, small data, 1 and 2 nodes, short sweeps (a few minutes)");
  cmd->add_option("--plot-script", args->plot_script, "The plot script (default: scripts/plot_suite.py of the source)");
  cmd->add_flag("--no-plots", args->no_plots, "Do not run the plot script");
  cmd->callback([args] {
    bench::SuiteOptions o;
    if (args->quick) o = bench::QuickSuiteOptions(o);
    if (args->graph_scale != 0) o.graph_scale = args->graph_scale;
    o.out_dir = args->out;
    o.saturation_clients = args->saturation_clients;
    o.fabric = args->fabric;
    if (!args->apps.empty()) o.apps = SplitList(args->apps);
    if (!args->systems.empty()) o.systems = SplitList(args->systems);
    if (!args->regimes.empty()) o.regimes = SplitList(args->regimes);
    if (!args->studies.empty()) o.studies = SplitList(args->studies);
    if (!args->nodes.empty()) {
      o.nodes.clear();
      for (const std::string& n : SplitList(args->nodes)) {
        try {
          o.nodes.push_back(static_cast<uint32_t>(std::stoul(n)));
        } catch (const std::exception&) {
          Fail(fmt::format("--nodes '{}' is not a number", n));
        }
      }
    }
    if (args->seconds > 0) o.seconds = args->seconds;
    for (const auto& [app, size] : ParseSizes(args->sizes, o.apps)) o.sizes[app] = size;
    if (!args->no_plots) o.plot_script = args->plot_script.empty() ? DefaultPlotScript() : args->plot_script;
    o.progress = [](const std::string& line) { std::cerr << "[bench suite] " << line << std::endl; };
    auto r = bench::RunSuite(o);
    if (!r.ok()) Fail(r.status().ToString());
    std::cout << bench::SuiteComparisonTable(*r) << "\n"
              << fmt::format("{}\nresults: {}/results.json, report: {}/report.md\n", r->plots_note, o.out_dir,
                             o.out_dir);
  });
}

}  // namespace pulse::tools
