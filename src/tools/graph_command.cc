// pulse graph gen | run: make benchmark graphs (generators with fixed
// seeds) and run one application on a graph file in local memory, writing
// its answer as JSON (the networkx correctness test reads it).
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pulse/graph/apps.h"
#include "pulse/graph/generators.h"
#include "pulse/graph/graph_io.h"
#include "tools/commands.h"

namespace pulse::tools {
namespace {

[[noreturn]] void Fail(const std::string& command, const Status& s) {
  std::cerr << "pulse graph " << command << ": " << s.ToString() << "\n";
  throw CLI::RuntimeError(1);
}

struct GenArgs {
  std::string kind = "rmat";
  graph::RmatOptions rmat;
  uint64_t n = 1000;
  uint64_t edges = 10000;
  bool symmetrize = false;
  std::string format = "binary";
  std::string out;
};

void AddGen(CLI::App& graph) {
  auto a = std::make_shared<GenArgs>();
  CLI::App* cmd = graph.add_subcommand("gen", "Generate a graph with a fixed seed and write it to a file");
  cmd->add_option("--kind", a->kind, "rmat (Graph500 Kronecker: a=0.57 b=c=0.19) or uniform")
      ->check(CLI::IsMember({"rmat", "uniform"}))
      ->capture_default_str();
  cmd->add_option("--scale", a->rmat.scale, "rmat: 2^scale vertices")->capture_default_str();
  cmd->add_option("--edge-factor", a->rmat.edge_factor, "rmat: edges drawn per vertex")->capture_default_str();
  cmd->add_option("-a", a->rmat.a, "rmat: quadrant probability a")->capture_default_str();
  cmd->add_option("-b", a->rmat.b, "rmat: quadrant probability b")->capture_default_str();
  cmd->add_option("-c", a->rmat.c, "rmat: quadrant probability c")->capture_default_str();
  cmd->add_flag("!--no-permute", a->rmat.permute, "rmat: keep the recursion's vertex ids (no random relabelling)");
  cmd->add_option("--n", a->n, "uniform: vertices")->capture_default_str();
  cmd->add_option("--edges", a->edges, "uniform: edges drawn")->capture_default_str();
  cmd->add_option("--seed", a->rmat.seed, "Seed")->capture_default_str();
  cmd->add_flag("--symmetrize", a->symmetrize, "Add every edge in both directions (an undirected graph)");
  cmd->add_option("--format", a->format, "binary (PULSECSR) or adj (Ligra's AdjacencyGraph text)")
      ->check(CLI::IsMember({"binary", "adj"}))
      ->capture_default_str();
  cmd->add_option("--out", a->out, "Output file")->required();
  cmd->callback([a] {
    auto list = a->kind == "rmat" ? graph::GenerateRmat(a->rmat) : graph::GenerateUniform(a->n, a->edges, a->rmat.seed);
    if (!list.ok()) Fail("gen", list.status());
    auto space = graph::MakeLocalArraySpace();
    auto g = graph::CsrGraph::FromEdges(std::move(*list), a->symmetrize, *space);
    if (!g.ok()) Fail("gen", g.status());
    Status s = a->format == "adj" ? graph::WriteAdjacencyGraph(*g, a->out) : graph::WriteBinaryGraph(*g, a->out);
    if (!s.ok()) Fail("gen", s);
    std::cout << nlohmann::json{{"file", a->out},           {"vertices", g->num_vertices()},
                                {"edges", g->num_edges()},  {"symmetric", g->symmetric()},
                                {"bytes", g->footprint_bytes()}}
                     .dump()
              << std::endl;
  });
}

struct RunArgs {
  std::string app;
  std::string graph;
  std::string out;
  bool symmetric = false;
  uint32_t threads = 2;
  bool bc_all_sources = false;
  graph::AppOptions options;
};

void AddRun(CLI::App& graph) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = graph.add_subcommand(
      "run", "Run one application on a graph file in local memory and write its answer as JSON");
  cmd->add_option("--app", a->app, "bfs | pagerank | radii | bc | cc")->required();
  cmd->add_option("--graph", a->graph, "Graph file (AdjacencyGraph text or PULSECSR binary)")->required();
  cmd->add_option("--out", a->out, "JSON answer: labels, values, parents, sources, rounds")->required();
  cmd->add_flag("--symmetric,-s", a->symmetric, "The text graph is symmetric (Ligra's -s)");
  cmd->add_option("--threads", a->threads, "Worker threads")->capture_default_str()->check(CLI::Range(1u, 256u));
  cmd->add_option("--root", a->options.root, "bfs, bc: the source vertex")->capture_default_str();
  cmd->add_option("--iterations", a->options.pagerank_max_iterations, "pagerank: at most this many iterations")
      ->capture_default_str();
  cmd->add_option("--epsilon", a->options.pagerank_epsilon, "pagerank: stop below this L1 change (0: never)")
      ->capture_default_str();
  cmd->add_option("--seed", a->options.radii_seed, "radii: seed of the sampled sources")->capture_default_str();
  cmd->add_flag("--bc-all-sources", a->bc_all_sources,
                "bc: sum the dependencies over every source (unnormalised betweenness, each pair counted\n"
                "in both directions)");
  cmd->callback([a] {
    auto app = graph::AppFromName(a->app);
    if (!app.ok()) Fail("run", app.status());
    auto space = graph::MakeLocalArraySpace();
    auto g = graph::LoadGraph(a->graph, a->symmetric, *space);
    if (!g.ok()) Fail("run", g.status());
    graph::Workers workers(a->threads);
    Result<graph::AppResult> r = Status::Internal("not run");
    if (*app == graph::App::kBc && a->bc_all_sources) {
      graph::AppResult sum;
      sum.app = graph::App::kBc;
      sum.values.assign(g->num_vertices(), 0.0);
      for (graph::VertexId root = 0; root < g->num_vertices(); ++root) {
        a->options.root = root;
        auto one = graph::RunBc(*g, *space, workers, a->options);
        if (!one.ok()) Fail("run", one.status());
        for (size_t v = 0; v < sum.values.size(); ++v) sum.values[v] += one->values[v];
        sum.rounds += one->rounds;
      }
      r = std::move(sum);
    } else {
      r = graph::RunApp(*app, *g, *space, workers, a->options);
    }
    if (!r.ok()) Fail("run", r.status());
    nlohmann::json j = {{"app", a->app},         {"vertices", g->num_vertices()}, {"edges", g->num_edges()},
                        {"rounds", r->rounds},   {"labels", r->labels},           {"values", r->values},
                        {"sources", r->sources}, {"root", a->options.root}};
    nlohmann::json parents = nlohmann::json::array();
    for (graph::VertexId p : r->parents) parents.push_back(p == graph::kNoVertex ? -1 : static_cast<int64_t>(p));
    j["parents"] = std::move(parents);
    std::ofstream out(a->out);
    out << j.dump() << "\n";
    if (!out) Fail("run", Status::IoError(fmt::format("cannot write '{}'", a->out)));
  });
}

}  // namespace

void AddGraphCommands(CLI::App& app) {
  CLI::App* graph = app.add_subcommand("graph", "Graph processing: generate graphs, run an application (docs/graph.md)");
  graph->require_subcommand(1);
  AddGen(*graph);
  AddRun(*graph);
}

}  // namespace pulse::tools
