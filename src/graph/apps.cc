// The application table, result comparison and the BFS tree check.
#include <cmath>

#include <fmt/format.h>

#include "pulse/graph/apps.h"

namespace pulse::graph {
namespace {

struct AppEntry {
  App app;
  std::string_view name;
  Result<AppResult> (*run)(const CsrGraph&, ArraySpace&, Workers&, const AppOptions&);
};

constexpr AppEntry kApps[] = {
    {App::kBfs, "bfs", RunBfs},     {App::kPageRank, "pagerank", RunPageRank},
    {App::kRadii, "radii", RunRadii}, {App::kBc, "bc", RunBc},
    {App::kComponents, "cc", RunComponents},
};

}  // namespace

std::string_view AppName(App app) {
  for (const auto& e : kApps)
    if (e.app == app) return e.name;
  return "?";
}

Result<App> AppFromName(std::string_view name) {
  for (const auto& e : kApps)
    if (e.name == name) return e.app;
  return Status::InvalidArgument(fmt::format("graph app '{}' is not one of bfs, pagerank, radii, bc, cc", name));
}

std::vector<App> AllApps() {
  std::vector<App> apps;
  for (const auto& e : kApps) apps.push_back(e.app);
  return apps;
}

Result<AppResult> RunApp(App app, const CsrGraph& g, ArraySpace& space, Workers& workers, const AppOptions& options) {
  for (const auto& e : kApps)
    if (e.app == app) return e.run(g, space, workers, options);
  return Status::InvalidArgument("graph app: unknown application");
}

Status CompareResults(const AppResult& expected, const AppResult& actual, double tolerance) {
  std::string_view name = AppName(expected.app);
  if (expected.app != actual.app)
    return Status::FailedPrecondition(fmt::format("{}: compared with a result of {}", name, AppName(actual.app)));
  if (expected.labels.size() != actual.labels.size() || expected.values.size() != actual.values.size())
    return Status::FailedPrecondition(fmt::format("{}: {} labels and {} values expected, got {} and {}", name,
                                                  expected.labels.size(), expected.values.size(),
                                                  actual.labels.size(), actual.values.size()));
  for (size_t v = 0; v < expected.labels.size(); ++v)
    if (expected.labels[v] != actual.labels[v])
      return Status::FailedPrecondition(
          fmt::format("{}: vertex {} has {} instead of {}", name, v, actual.labels[v], expected.labels[v]));
  for (size_t v = 0; v < expected.values.size(); ++v) {
    double e = expected.values[v], a = actual.values[v];
    if (!(std::fabs(e - a) <= tolerance * std::max(1.0, std::fabs(e))))
      return Status::FailedPrecondition(fmt::format("{}: vertex {} has {} instead of {}", name, v, a, e));
  }
  if (expected.sources != actual.sources)
    return Status::FailedPrecondition(fmt::format("{}: different sampled sources", name));
  return Status::Ok();
}

Status CheckBfsTree(const CsrGraph& g, VertexId root, const AppResult& bfs) {
  uint64_t n = g.num_vertices();
  if (bfs.parents.size() != n || bfs.labels.size() != n)
    return Status::FailedPrecondition(fmt::format("bfs: {} parents for {} vertices", bfs.parents.size(), n));
  if (bfs.parents[root] != root)
    return Status::FailedPrecondition(fmt::format("bfs: root {} has parent {}", root, bfs.parents[root]));
  for (uint64_t v = 0; v < n; ++v) {
    VertexId p = bfs.parents[v];
    if (v == root || p == kNoVertex) continue;
    if (bfs.labels[v] != bfs.labels[p] + 1)
      return Status::FailedPrecondition(fmt::format("bfs: vertex {} at depth {} has parent {} at depth {}", v,
                                                    bfs.labels[v], p, bfs.labels[p]));
    bool edge = false;
    for (const VertexId* e = g.in_begin(static_cast<VertexId>(v)); e != g.in_end(static_cast<VertexId>(v)); ++e)
      edge |= *e == p;
    if (!edge) return Status::FailedPrecondition(fmt::format("bfs: parent {} of vertex {} is not an in-neighbour", p, v));
  }
  return Status::Ok();
}

}  // namespace pulse::graph
