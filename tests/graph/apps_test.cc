// The five applications against the sequential references of reference.h
// on random graphs (uniform and R-MAT, symmetric and directed, with
// isolated vertices), on 1, 2 and 4 threads.
#include <gtest/gtest.h>

#include "graph/reference.h"
#include "pulse/graph/apps.h"
#include "pulse/graph/edge_map.h"
#include "pulse/graph/generators.h"

namespace pulse::graph {
namespace {

using testing::MakeRefGraph;

struct Case {
  const char* name;
  bool rmat;
  bool symmetric;
  uint64_t n_or_scale;
  uint64_t edges_or_factor;
  uint64_t seed;
  uint32_t threads;
};

EdgeList Generate(const Case& c) {
  if (c.rmat) {
    RmatOptions o;
    o.scale = static_cast<uint32_t>(c.n_or_scale);
    o.edge_factor = static_cast<uint32_t>(c.edges_or_factor);
    o.seed = c.seed;
    return *GenerateRmat(o);
  }
  return *GenerateUniform(c.n_or_scale, c.edges_or_factor, c.seed);
}

AppResult Expected(App app, std::vector<double> values) {
  AppResult r;
  r.app = app;
  r.values = std::move(values);
  return r;
}

class AppsTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    EdgeList list = Generate(GetParam());
    ref_ = MakeRefGraph(list, GetParam().symmetric);
    auto g = CsrGraph::FromEdges(std::move(list), GetParam().symmetric, *space_);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    graph_ = std::move(*g);
    // A root with out-edges, so the searches go somewhere.
    for (VertexId v = 0; v < graph_.num_vertices(); ++v)
      if (graph_.out_degree(v) > 0) {
        options_.root = v;
        break;
      }
  }

  std::unique_ptr<ArraySpace> space_ = MakeLocalArraySpace();
  testing::RefGraph ref_;
  CsrGraph graph_;
  AppOptions options_;
  Workers workers_{GetParam().threads};
};

TEST_P(AppsTest, CsrMatchesReferenceAdjacency) {
  ASSERT_EQ(graph_.num_vertices(), ref_.out.size());
  for (VertexId v = 0; v < graph_.num_vertices(); ++v) {
    EXPECT_EQ(std::vector<VertexId>(graph_.out_begin(v), graph_.out_end(v)), ref_.out[v]) << "out-edges of " << v;
    EXPECT_EQ(std::vector<VertexId>(graph_.in_begin(v), graph_.in_end(v)), ref_.in[v]) << "in-edges of " << v;
  }
}

TEST_P(AppsTest, BfsDepthsAndTree) {
  auto r = RunBfs(graph_, *space_, workers_, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->labels, testing::RefBfsDepths(ref_, options_.root));
  EXPECT_TRUE(CheckBfsTree(graph_, options_.root, *r).ok());
}

TEST_P(AppsTest, PageRankFixedIterations) {
  options_.pagerank_max_iterations = 12;
  options_.pagerank_epsilon = 0;
  auto r = RunPageRank(graph_, *space_, workers_, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rounds, 12u);
  AppResult expected = Expected(App::kPageRank, testing::RefPageRank(ref_, 12, 0.85));
  Status s = CompareResults(expected, *r, 1e-12);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_P(AppsTest, PageRankStopsAtEpsilon) {
  options_.pagerank_epsilon = 1e-3;
  auto r = RunPageRank(graph_, *space_, workers_, options_);
  ASSERT_TRUE(r.ok());
  EXPECT_LT(r->rounds, options_.pagerank_max_iterations);
  AppResult expected = Expected(App::kPageRank, testing::RefPageRank(ref_, r->rounds, 0.85));
  EXPECT_TRUE(CompareResults(expected, *r, 1e-12).ok());
}

TEST_P(AppsTest, RadiiIsMaxDistanceFromSampledSources) {
  auto r = RunRadii(graph_, *space_, workers_, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->sources.size(), std::min<uint64_t>(64, graph_.num_vertices()));
  EXPECT_EQ(r->sources, SampleRadiiSources(graph_.num_vertices(), 64, options_.radii_seed));
  EXPECT_EQ(r->labels, testing::RefRadii(ref_, r->sources));
}

TEST_P(AppsTest, BcDependencies) {
  auto r = RunBc(graph_, *space_, workers_, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  AppResult expected = Expected(App::kBc, testing::RefBcDependencies(ref_, options_.root));
  Status s = CompareResults(expected, *r, 1e-9);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_P(AppsTest, ComponentsAreMinimumIds) {
  auto r = RunComponents(graph_, *space_, workers_, options_);
  if (!GetParam().symmetric) {
    EXPECT_EQ(r.status().code(), Status::Code::kFailedPrecondition);
    return;
  }
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->labels, testing::RefComponents(ref_));
}

INSTANTIATE_TEST_SUITE_P(
    Graphs, AppsTest,
    ::testing::Values(Case{"uniform_sym_sparse_t1", false, true, 2000, 1500, 1, 1},  // many components, isolated vertices
                      Case{"uniform_sym_t2", false, true, 3000, 12000, 2, 2},
                      Case{"uniform_dir_t4", false, false, 2000, 10000, 3, 4},
                      Case{"rmat_sym_t2", true, true, 12, 8, 4, 2}, Case{"rmat_sym_t4", true, true, 11, 16, 5, 4},
                      Case{"rmat_dir_t2", true, false, 12, 8, 6, 2}, Case{"tiny_sym_t2", false, true, 5, 4, 7, 2}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(EdgeMapTest, SparseAndDenseActivateTheSameVertices) {
  auto space = MakeLocalArraySpace();
  auto g = CsrGraph::FromEdges(*GenerateUniform(1000, 5000, 11), false, *space);
  ASSERT_TRUE(g.ok());
  Workers workers(2);
  // "Claim each unclaimed vertex once": both modes must claim the same set
  // (any frontier neighbour may be the claimer).
  std::vector<VertexId> ids;
  for (VertexId v = 0; v < 1000; v += 7) ids.push_back(v);
  std::vector<uint8_t> flags_sparse, flags_dense;
  for (EdgeMapMode mode : {EdgeMapMode::kSparse, EdgeMapMode::kDense}) {
    std::vector<VertexId> owner(1000, kNoVertex);
    struct Claim {
      VertexId* owner;
      bool Update(VertexId s, VertexId d) { return owner[d] == kNoVertex ? (owner[d] = s, true) : false; }
      bool UpdateAtomic(VertexId s, VertexId d) {
        VertexId e = kNoVertex;
        return std::atomic_ref<VertexId>(owner[d]).compare_exchange_strong(e, s);
      }
      bool Cond(VertexId d) { return std::atomic_ref<VertexId>(owner[d]).load() == kNoVertex; }
    } f{owner.data()};
    VertexSubset frontier = VertexSubset::FromSparse(1000, ids);
    uint64_t sparse_before = GlobalEdgeMapCounts().sparse, dense_before = GlobalEdgeMapCounts().dense;
    VertexSubset out = EdgeMap(*g, frontier, f, workers, EdgeMapOptions{.mode = mode});
    EXPECT_EQ(GlobalEdgeMapCounts().sparse - sparse_before, mode == EdgeMapMode::kSparse ? 1u : 0u);
    EXPECT_EQ(GlobalEdgeMapCounts().dense - dense_before, mode == EdgeMapMode::kDense ? 1u : 0u);
    EXPECT_EQ(out.is_dense(), mode == EdgeMapMode::kDense);
    out.ToDense();
    (mode == EdgeMapMode::kSparse ? flags_sparse : flags_dense) = out.flags();
    // Every claimed vertex is an out-neighbour of its claimer, a frontier member.
    for (VertexId v = 0; v < 1000; ++v)
      if (owner[v] != kNoVertex) {
        EXPECT_EQ(owner[v] % 7, 0u);
        EXPECT_TRUE(std::binary_search(g->out_begin(owner[v]), g->out_end(owner[v]), v));
      }
  }
  EXPECT_EQ(flags_sparse, flags_dense);
}

TEST(EdgeMapTest, LigraThresholdPicksTheMode) {
  auto space = MakeLocalArraySpace();
  auto g = CsrGraph::FromEdges(*GenerateUniform(1000, 20000, 12), true, *space);
  ASSERT_TRUE(g.ok());
  Workers workers(2);
  struct Nothing {
    bool Update(VertexId, VertexId) { return false; }
    bool UpdateAtomic(VertexId, VertexId) { return false; }
    bool Cond(VertexId) { return true; }
  } f;
  // One vertex: |U| + deg(U) is far below |E| / 20 = ~2000.
  VertexSubset one = VertexSubset::Single(1000, 0);
  uint64_t dense_before = GlobalEdgeMapCounts().dense;
  EdgeMap(*g, one, f, workers);
  EXPECT_EQ(GlobalEdgeMapCounts().dense, dense_before);
  VertexSubset all = VertexSubset::All(1000);
  EdgeMap(*g, all, f, workers);
  EXPECT_EQ(GlobalEdgeMapCounts().dense, dense_before + 1);
  EXPECT_EQ(FrontierOutDegrees(*g, all, workers), g->num_edges());
}

TEST(WorkersTest, EveryIndexExactlyOnce) {
  for (uint32_t threads : {1u, 2u, 3u, 8u}) {
    Workers workers(threads);
    std::vector<std::atomic<int>> hits(10007);
    for (int round = 0; round < 5; ++round)
      workers.ParallelFor(3, 10007, 97, [&](uint64_t lo, uint64_t hi, uint32_t worker) {
        EXPECT_LT(worker, threads);
        for (uint64_t i = lo; i < hi; ++i) hits[i].fetch_add(1);
      });
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), i < 3 ? 0 : 5) << "index " << i;
  }
}

TEST(AppArgumentsTest, RootOutOfRangeIsRejected) {
  auto space = MakeLocalArraySpace();
  auto g = CsrGraph::FromEdges(*GenerateUniform(10, 20, 1), true, *space);
  Workers workers(2);
  AppOptions o;
  o.root = 10;
  EXPECT_EQ(RunBfs(*g, *space, workers, o).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(RunBc(*g, *space, workers, o).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(AppFromName("sssp").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(*AppFromName("cc"), App::kComponents);
}

}  // namespace
}  // namespace pulse::graph
