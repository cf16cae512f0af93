// Graph files (both formats round trip; malformed files are refused with a
// named reason and before any large allocation) and the generators
// (deterministic by seed, the sizes they promise).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "graph/temp_dir.h"
#include "pulse/graph/generators.h"
#include "pulse/graph/graph_io.h"

namespace pulse::graph {
namespace {

class GraphIoTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) { return dir_.Path(name); }
  void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

  static void ExpectSame(const CsrGraph& a, const CsrGraph& b) {
    ASSERT_EQ(a.num_vertices(), b.num_vertices());
    ASSERT_EQ(a.num_edges(), b.num_edges());
    EXPECT_EQ(a.symmetric(), b.symmetric());
    for (uint64_t v = 0; v <= a.num_vertices(); ++v) ASSERT_EQ(a.offsets()[v], b.offsets()[v]) << v;
    for (uint64_t e = 0; e < a.num_edges(); ++e) ASSERT_EQ(a.edges()[e], b.edges()[e]) << e;
  }

  testing::TempDir dir_;
  std::unique_ptr<ArraySpace> space_ = MakeLocalArraySpace();
};

TEST_F(GraphIoTest, TextAndBinaryRoundTrip) {
  RmatOptions o;
  o.scale = 10;
  o.edge_factor = 8;
  for (bool symmetric : {true, false}) {
    auto g = CsrGraph::FromEdges(*GenerateRmat(o), symmetric, *space_);
    ASSERT_TRUE(g.ok());
    ASSERT_TRUE(WriteAdjacencyGraph(*g, Path("g.adj")).ok());
    ASSERT_TRUE(WriteBinaryGraph(*g, Path("g.bin")).ok());
    auto text = LoadGraph(Path("g.adj"), symmetric, *space_);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    ExpectSame(*g, *text);
    auto bin = LoadGraph(Path("g.bin"), !symmetric /* ignored: the file says */, *space_);
    ASSERT_TRUE(bin.ok()) << bin.status().ToString();
    ExpectSame(*g, *bin);
    // The transpose is rebuilt for a directed graph.
    for (VertexId v = 0; v < g->num_vertices(); ++v) ASSERT_EQ(g->in_degree(v), bin->in_degree(v));
  }
}

TEST_F(GraphIoTest, LigraExampleFile) {
  // A 3-vertex path 0 - 1 - 2 in Ligra's format, symmetric.
  WriteText(Path("path.adj"), "AdjacencyGraph\n3\n4\n0\n1\n3\n1\n0\n2\n1\n");
  auto g = ReadAdjacencyGraph(Path("path.adj"), true, *space_);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->num_vertices(), 3u);
  EXPECT_EQ(g->out_degree(1), 2u);
  EXPECT_EQ(g->out_begin(2)[0], 1u);
}

TEST_F(GraphIoTest, MalformedTextIsRefused) {
  struct Bad {
    const char* text;
    Status::Code code;
  } cases[] = {
      {"", Status::Code::kInvalidArgument},
      {"EdgeArray\n1\n0\n0\n", Status::Code::kInvalidArgument},
      {"AdjacencyGraph\n3\n2\n0\n1\n", Status::Code::kInvalidArgument},               // ends early
      {"AdjacencyGraph\n2\n1\n0\n1\n5\n", Status::Code::kInvalidArgument},            // edge target 5 >= n
      {"AdjacencyGraph\n2\n1\n1\n0\n1\n", Status::Code::kInvalidArgument},            // offsets decrease
      {"AdjacencyGraph\n2\n1\n0\n1\n1\n7\n", Status::Code::kInvalidArgument},         // trailing data
      {"AdjacencyGraph\n2\n1\n0\nx\n1\n", Status::Code::kInvalidArgument},            // not a number
      {"AdjacencyGraph\n4000000000\n90000000000\n0\n", Status::Code::kInvalidArgument},  // counts beyond the file
  };
  for (const auto& c : cases) {
    WriteText(Path("bad.adj"), c.text);
    auto g = ReadAdjacencyGraph(Path("bad.adj"), false, *space_);
    EXPECT_EQ(g.status().code(), c.code) << c.text;
    EXPECT_NE(g.status().message().find("bad.adj"), std::string::npos) << g.status().message();
  }
  EXPECT_EQ(LoadGraph(Path("missing"), false, *space_).status().code(), Status::Code::kNotFound);
}

TEST_F(GraphIoTest, TruncatedBinaryIsRefused) {
  auto g = CsrGraph::FromEdges(*GenerateUniform(100, 400, 3), true, *space_);
  ASSERT_TRUE(WriteBinaryGraph(*g, Path("g.bin")).ok());
  ASSERT_EQ(truncate(Path("g.bin").c_str(), 48 + 8 * 101 + 10), 0);
  auto r = ReadBinaryGraph(Path("g.bin"), *space_);
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("bytes"), std::string::npos);
}

TEST(GeneratorsTest, DeterministicBySeed) {
  RmatOptions o;
  o.scale = 8;
  auto a = GenerateRmat(o), b = GenerateRmat(o);
  o.seed = 2;
  auto c = GenerateRmat(o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->n, 256u);
  EXPECT_EQ(a->edges.size(), 256u * 16);
  EXPECT_EQ(a->edges, b->edges);
  EXPECT_NE(a->edges, c->edges);
  EXPECT_EQ(GenerateUniform(50, 70, 9)->edges, GenerateUniform(50, 70, 9)->edges);
  o.scale = 0;
  EXPECT_EQ(GenerateRmat(o).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(GenerateUniform(0, 1, 1).status().code(), Status::Code::kInvalidArgument);
}

TEST(GeneratorsTest, RmatIsSkewedTowardsTheFirstQuadrant) {
  RmatOptions o;
  o.scale = 12;
  o.permute = false;  // ids keep the recursion's quadrants
  auto list = GenerateRmat(o);
  uint64_t both_low = 0;
  for (auto [s, d] : list->edges) both_low += s < 2048 && d < 2048;
  // P(top-level quadrant a) = 0.57.
  double share = static_cast<double>(both_low) / static_cast<double>(list->edges.size());
  EXPECT_NEAR(share, 0.57, 0.02);
}

TEST(CsrGraphTest, FromEdgesDropsDuplicatesAndSelfLoops) {
  auto space = MakeLocalArraySpace();
  EdgeList list{4, {{0, 1}, {0, 1}, {2, 2}, {3, 0}}};
  auto g = CsrGraph::FromEdges(list, false, *space);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->num_edges(), 2u);
  EXPECT_EQ(g->in_degree(0), 1u);
  auto s = CsrGraph::FromEdges(list, true, *space);
  EXPECT_EQ(s->num_edges(), 4u);
  EdgeList bad{2, {{0, 2}}};
  EXPECT_EQ(CsrGraph::FromEdges(bad, true, *space).status().code(), Status::Code::kInvalidArgument);
  // The transpose view swaps directions.
  CsrGraph t = g->Transpose();
  EXPECT_EQ(t.out_degree(1), 1u);
  EXPECT_EQ(t.out_begin(1)[0], 0u);
}

}  // namespace
}  // namespace pulse::graph
