// The offloaded BFS (neighbour scans as traversals at the memory nodes)
// against the sequential reference, on a real rack of two memory nodes
// (the edge and parent arrays may sit on different nodes, so scans cross
// between them through the switch).
#include <gtest/gtest.h>

#include "graph/reference.h"
#include "pulse/graph/generators.h"
#include "pulse/graph/offloaded_bfs.h"
#include "support/ds_cluster.h"

namespace pulse::graph {
namespace {

class OffloadedBfsTest : public ds::testing::DsCluster {
 protected:
  void Check(EdgeList list, bool symmetric, VertexId root) {
    auto ref = testing::MakeRefGraph(list, symmetric);
    auto space = MakeLocalArraySpace();
    auto g = CsrGraph::FromEdges(std::move(list), symmetric, *space);
    ASSERT_TRUE(g.ok());
    auto bfs = OffloadedBfs::Upload(*client_, *g);
    ASSERT_TRUE(bfs.ok()) << bfs.status().ToString();
    auto r = bfs->Run(root);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto depths = testing::RefBfsDepths(ref, root);
    EXPECT_EQ(r->labels, depths);
    Status tree = CheckBfsTree(*g, root, *r);
    EXPECT_TRUE(tree.ok()) << tree.ToString();
    // Every edge leaving a reached vertex is scanned once: two iterations each.
    uint64_t scanned = 0;
    for (VertexId v = 0; v < g->num_vertices(); ++v)
      if (depths[v] >= 0) scanned += g->out_degree(v);
    EXPECT_EQ(bfs->stats().iterations, 2 * scanned);
    uint64_t reached = std::count_if(depths.begin(), depths.end(), [](int64_t d) { return d >= 0; });
    EXPECT_GE(bfs->stats().vertices_returned, reached - 1);
    // A second run starts from a clean parent array.
    auto again = bfs->Run(root);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->labels, depths);
  }
};

TEST_F(OffloadedBfsTest, UniformSymmetric) { Check(*GenerateUniform(500, 1500, 3), true, 7); }

TEST_F(OffloadedBfsTest, RmatDirected) {
  RmatOptions o;
  o.scale = 9;
  o.edge_factor = 8;
  Check(*GenerateRmat(o), false, 0);
}

TEST_F(OffloadedBfsTest, HighDegreeScanIsResumed) {
  // A star with 1000 leaves: the hub's scan reports 32 vertices at a time.
  EdgeList star{1001, {}};
  for (VertexId leaf = 1; leaf <= 1000; ++leaf) star.edges.emplace_back(0, leaf);
  Check(std::move(star), true, 0);
}

TEST_F(OffloadedBfsTest, RootOutOfRange) {
  auto space = MakeLocalArraySpace();
  auto g = CsrGraph::FromEdges(*GenerateUniform(10, 20, 1), true, *space);
  auto bfs = OffloadedBfs::Upload(*client_, *g);
  ASSERT_TRUE(bfs.ok());
  EXPECT_EQ(bfs->Run(10).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace pulse::graph
