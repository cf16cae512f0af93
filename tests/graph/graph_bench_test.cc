// pulse bench graph end to end on a small R-MAT graph: every application's
// answer on far memory (the SSD baseline's O_DIRECT file, a real memory node
// through the host agent, and BFS offloaded to it), paged through a buffer a quarter of the
// graph or less, equals the in-memory run; a system that cannot run is
// reported per result, not faked.
#include <gtest/gtest.h>

#include <iostream>

#include "bench/graph_bench.h"
#include "graph/temp_dir.h"
#include "pulse/graph/generators.h"
#include "pulse/graph/graph_io.h"

namespace pulse::bench {
namespace {

class GraphBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto space = graph::MakeLocalArraySpace();
    graph::RmatOptions r;
    r.scale = 13;
    auto g = graph::CsrGraph::FromEdges(*graph::GenerateRmat(r), true, *space);
    ASSERT_TRUE(g.ok());
    csr_bytes_ = g->footprint_bytes();
    file_ = dir_.Path("rmat-13.bin");
    ASSERT_TRUE(graph::WriteBinaryGraph(*g, file_).ok());
  }

  GraphBenchOptions Options(std::vector<std::string> systems) {
    GraphBenchOptions o;
    o.graphs = {file_};
    o.systems = std::move(systems);
    o.page_bytes = 4096;
    o.buffer_bytes = 192 << 10;
    o.pagerank_iterations = 3;
    o.binary = PULSE_BINARY;
    o.progress = [](const std::string& line) { std::cerr << "[bench graph] " << line << std::endl; };
    return o;
  }

  graph::testing::TempDir dir_;
  std::string file_;
  uint64_t csr_bytes_ = 0;
};

TEST_F(GraphBenchTest, FarSystemsAnswerAsInMemory) {
  ASSERT_GE(csr_bytes_, 4 * (192u << 10)) << "the graph must be at least four times the buffer";
  auto r = RunGraphBench(Options({"local", "ssd", "memserver", "offload"}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& results = (*r)["results"];
  ASSERT_EQ(results.size(), 20u);
  for (const auto& x : results) {
    SCOPED_TRACE(x.dump());
    if (x["system"] == "offload" && x["app"] != "bfs") {  // only BFS is offloaded
      EXPECT_TRUE(x.contains("error"));
      continue;
    }
    EXPECT_FALSE(x.contains("error"));
    EXPECT_TRUE(x["verified"].get<bool>());
    if (x["system"] == "offload") {
      EXPECT_GT(x["counters"]["iterations"].get<double>(), 0);
    } else if (x["system"] != "local") {
      EXPECT_EQ(x["buffer_bytes"].get<uint64_t>(), 192u << 10);
      EXPECT_GT(x["counters"]["pages_fetched"].get<double>(), 0);
    }
  }
}

TEST_F(GraphBenchTest, EveryFetchThroughTheAgentIsTimedOnItsHop) {
  GraphBenchOptions o = Options({"proxy"});
  o.apps = {"bfs"};
  o.agent_flags = "--no-static-cache --no-dynamic-cache";
  auto r = RunGraphBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& results = (*r)["results"];
  ASSERT_EQ(results.size(), 1u);
  const auto& x = results[0];
  SCOPED_TRACE(x.dump());
  ASSERT_FALSE(x.contains("error"));
  EXPECT_TRUE(x["verified"].get<bool>());
  const auto& c = x["counters"];
  EXPECT_GT(c["pages_fetched"].get<double>(), 0);
  EXPECT_EQ(c["hop_reads_timed"].get<double>(), c["pages_fetched"].get<double>())
      << "each fetch is one lane read the agent stamped";
  EXPECT_LE(c["hop_reads_slept"].get<double>(), c["hop_reads_timed"].get<double>());
  EXPECT_TRUE(x["derived"].contains("hop_us_from_agent"));
}

TEST_F(GraphBenchTest, SystemsThatCannotRunAreReportedNotFaked) {
  GraphBenchOptions unreachable = Options({"proxy"});
  unreachable.proxy_agent_address = "127.0.0.1:1";  // no `pulse agent` there
  auto r = RunGraphBench(unreachable);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE((*r)["results"].empty());
  for (const auto& x : (*r)["results"]) {
    EXPECT_TRUE(x.contains("error"));
    EXPECT_FALSE(x["verified"].get<bool>());
  }
  EXPECT_EQ(RunGraphBench(Options({"cxl"})).status().code(), Status::Code::kInvalidArgument);
  auto o = Options({"local"});
  o.apps = {"sssp"};
  EXPECT_EQ(RunGraphBench(o).status().code(), Status::Code::kInvalidArgument);
}

// `--system agent` (or proxy) alone starts the agent it needs in its mode;
// both at once cannot share one defaulted agent and are refused before
// anything runs; flags, addresses or a joined cluster are the user's.
TEST(GraphBenchDefaults, ALoneProxyOrAgentGetsAnAgentOfItsMode) {
  GraphBenchOptions o;
  o.systems = {"local", "agent"};
  EXPECT_EQ(DefaultAgentFlags(o).value(), "--mode agent");
  o.systems = {"memserver", "proxy"};
  EXPECT_EQ(DefaultAgentFlags(o).value(), "--mode proxy");
  o.systems = {"proxy", "agent"};
  EXPECT_EQ(DefaultAgentFlags(o).status().code(), Status::Code::kInvalidArgument);
  o.proxy_agent_address = "127.0.0.1:7300";  // proxy has its agent: agent's is defaulted
  EXPECT_EQ(DefaultAgentFlags(o).value(), "--mode agent");
  o.agent_flags = "--no-dynamic-cache";
  EXPECT_EQ(DefaultAgentFlags(o).value(), "--no-dynamic-cache");
  GraphBenchOptions joined;
  joined.systems = {"agent"};
  joined.switch_address = "127.0.0.1:7100";  // nothing is started
  EXPECT_EQ(DefaultAgentFlags(joined).value(), "");
  GraphBenchOptions none;
  none.systems = {"local", "ssd", "memserver"};
  EXPECT_EQ(DefaultAgentFlags(none).value(), "") << "no agent when no system pages through one";
}

TEST_F(GraphBenchTest, ProxyAndAgentWithoutFlagsAreRefusedBeforeAnythingRuns) {
  std::vector<std::string> said;
  GraphBenchOptions o = Options({"local", "proxy", "agent"});
  o.progress = [&said](const std::string& line) { said.push_back(line); };
  auto r = RunGraphBench(o);
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("--system proxy, then --system agent"), std::string::npos);
  EXPECT_TRUE(said.empty()) << "nothing ran: " << said.front();
}

}  // namespace
}  // namespace pulse::bench
