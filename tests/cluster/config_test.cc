// The cluster description: the embedded default, and errors that name the key.
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "cluster/config.h"

namespace pulse::cluster {
namespace {

class ClusterConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("PULSE_RUN_DIR");
    unsetenv("PULSE_ROUTING");
  }
};

std::string ErrorOf(const std::string& text) {
  auto c = ParseClusterConfig(text, "test.toml");
  EXPECT_FALSE(c.ok()) << text;
  return c.ok() ? "" : c.status().message();
}

TEST_F(ClusterConfigTest, EmbeddedDefaultIsOneSwitchAndFourMemoryNodes) {
  auto c = ParseClusterConfig(EmbeddedLocalConfig(), "embedded");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, "local");
  EXPECT_EQ(c->SwitchAddress(), "127.0.0.1:7100");
  ASSERT_EQ(c->memnodes.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(c->memnodes[i].node, i);
    EXPECT_EQ(c->memnodes[i].port, 7101 + i);
    EXPECT_EQ(c->memnodes[i].Name(), "memnode-" + std::to_string(i));
  }
  EXPECT_EQ(c->StateFile(), "run/local/state.json");
  bool posix = false;
  for (const auto& [k, v] : c->env) posix = posix || (k == "UCX_POSIX_ERROR_HANDLING" && v == "y");
  EXPECT_TRUE(posix);
}

TEST_F(ClusterConfigTest, DefaultsFillMissingKeys) {
  auto c = ParseClusterConfig("[[memnode]]\n[[memnode]]\nport = 9000\n", "t");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->switch_node.port, 7100);
  EXPECT_EQ(c->memnodes[0].node, 0u);
  EXPECT_EQ(c->memnodes[0].port, 0);
  EXPECT_EQ(c->memnodes[1].node, 1u);
  EXPECT_EQ(c->memnodes[1].pool_mib, 256u);
  EXPECT_EQ(c->poll.window_us, 50u);
}

TEST_F(ClusterConfigTest, PerNodePollOverridesTheClusterSetting) {
  auto c = ParseClusterConfig("[poll]\nwindow_us = 7\n[[memnode]]\npoll = { busy = true }\n[[memnode]]\n", "t");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->PollOf(c->memnodes[0]).busy);
  EXPECT_FALSE(c->PollOf(c->memnodes[1]).busy);
  EXPECT_EQ(c->PollOf(c->memnodes[1]).window_us, 7u);
}

// The idle-core rule (net::WorkerOptions::poll_when_core_idle): on by
// default and in the embedded local cluster (with the 50 us window), off
// per node or for the cluster, and a wrong type names the key.
TEST_F(ClusterConfigTest, PollWhenCoreIdleDefaultsOnAndIsOverridable) {
  auto embedded = ParseClusterConfig(EmbeddedLocalConfig(), "embedded");
  ASSERT_TRUE(embedded.ok()) << embedded.status().ToString();
  EXPECT_EQ(embedded->poll.window_us, 50u);
  EXPECT_TRUE(embedded->poll.when_core_idle);
  EXPECT_FALSE(embedded->poll.busy);

  auto c = ParseClusterConfig("[[memnode]]\n", "t");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->poll.when_core_idle) << "not given: on";

  c = ParseClusterConfig("[poll]\nwhen_core_idle = false\n[[memnode]]\npoll = { when_core_idle = true }\n[[memnode]]\n",
                         "t");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->poll.when_core_idle);
  EXPECT_TRUE(c->PollOf(c->memnodes[0]).when_core_idle);
  EXPECT_FALSE(c->PollOf(c->memnodes[1]).when_core_idle);

  EXPECT_NE(ErrorOf("[poll]\nwhen_core_idle = 1\n[[memnode]]\n").find("poll.when_core_idle: expected a boolean"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[memnode]]\npoll = { when_core_idle = \"yes\" }\n")
                .find("memnode[0].poll.when_core_idle: expected a boolean"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[poll]\nwhen_idle = true\n[[memnode]]\n").find("poll.when_idle: unknown key"), std::string::npos);
}

TEST_F(ClusterConfigTest, RunDirFromTheEnvironmentWins) {
  setenv("PULSE_RUN_DIR", "/tmp/elsewhere", 1);
  auto c = ParseClusterConfig("[cluster]\nrun_dir = \"x\"\n[[memnode]]\n", "t");
  unsetenv("PULSE_RUN_DIR");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ClusterDir(), "/tmp/elsewhere/local");
}

TEST_F(ClusterConfigTest, RoutingComesFromTheTomlAndTheEnvironmentWins) {
  auto c = ParseClusterConfig("[[memnode]]\n", "t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->routing, "") << "not given: the switch's default (direct)";
  c = ParseClusterConfig("[cluster]\nrouting = \"switch\"\n[[memnode]]\n", "t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->routing, "switch");
  setenv("PULSE_ROUTING", "direct", 1);
  c = ParseClusterConfig("[cluster]\nrouting = \"switch\"\n[[memnode]]\n", "t");
  unsetenv("PULSE_ROUTING");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->routing, "direct");
  EXPECT_NE(ErrorOf("[cluster]\nrouting = \"rack\"\n[[memnode]]\n").find("cluster.routing: 'rack' is not direct or switch"),
            std::string::npos);
}

TEST_F(ClusterConfigTest, ErrorsNameTheKey) {
  EXPECT_NE(ErrorOf("[[memnode]]\n[[memnode]]\n[[memnode]]\nport = \"x\"\n")
                .find("cluster config: memnode[2].port: expected an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[switch]\nport = 70000\n[[memnode]]\n").find("switch.port: 70000 is out of range"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[cluster]\nrundir = \"x\"\n[[memnode]]\n").find("cluster.rundir: unknown key"), std::string::npos);
  EXPECT_NE(ErrorOf("[poll]\nbusy = 1\n[[memnode]]\n").find("poll.busy: expected a boolean"), std::string::npos);
  EXPECT_NE(ErrorOf("[[memnode]]\nnode = 1\n[[memnode]]\nnode = 1\n").find("memnode[1].node: id 1 is used twice"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[switch]\nport = 7100\n[[memnode]]\nport = 7100\n").find("memnode[0].port"), std::string::npos);
  EXPECT_NE(ErrorOf("[[memnode]]\npool_mib = 1\ngranularity_kib = 12\n").find("memnode[0].pool_mib"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[cluster]\nname = \"a\"\n").find("memnode"), std::string::npos);
  EXPECT_NE(ErrorOf("[transport.env]\nUCX_TLS = 3\n[[memnode]]\n").find("transport.env.UCX_TLS: expected a string"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[cluster]\nlog_level = \"loud\"\n[[memnode]]\n").find("cluster.log_level"), std::string::npos);
}

TEST_F(ClusterConfigTest, EnginePipelinesPerMemoryNode) {
  auto c = ParseClusterConfig("[[memnode]]\npipelines = 2\n[[memnode]]\n", "t");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->memnodes[0].pipelines, 2u);
  EXPECT_EQ(c->memnodes[1].pipelines, 0u) << "not given: the node's default";
  EXPECT_NE(ErrorOf("[[memnode]]\npipelines = 0\n").find("memnode[0].pipelines: 0 is out of range"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[memnode]]\npipelines = \"two\"\n").find("memnode[0].pipelines: expected an integer"),
            std::string::npos);
}

TEST_F(ClusterConfigTest, EnginePerMemoryNode) {
  auto c = ParseClusterConfig("[[memnode]]\nengine = \"interp\"\n[[memnode]]\n", "t");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->memnodes[0].engine, "interp");
  EXPECT_EQ(c->memnodes[1].engine, "") << "not given: $PULSE_ENGINE, else the node's default";
  EXPECT_NE(ErrorOf("[[memnode]]\nengine = \"llvm\"\n").find("memnode[0].engine: 'llvm' is not interp or jit"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[memnode]]\nengine = 1\n").find("memnode[0].engine: expected a string"), std::string::npos);
}

// [tx]: the transactions' replicas, carried to the memory nodes as
// $PULSE_TX_*; absent, nothing is passed (the nodes' defaults).
TEST_F(ClusterConfigTest, TxSectionReachesTheMemoryNodesEnvironment) {
  auto none = ParseClusterConfig("[[memnode]]\n", "t");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->tx.has_value());
  auto c = ParseClusterConfig(
      "[tx]\nchain_length = 2\nlog_dir = \"/srv/txlogs\"\nsync = \"none\"\ncompact_mib = 8\nkeep_records = 100\n"
      "replica_path = \"am\"\n[[memnode]]\n[[memnode]]\n",
      "t");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->tx.has_value());
  EXPECT_EQ(c->tx->chain_length, 2u);
  std::vector<std::pair<std::string, std::string>> env = TxEnvironment(*c->tx);
  auto value = [&](const std::string& k) {
    for (const auto& [name, v] : env)
      if (name == k) return v;
    return std::string("<unset>");
  };
  EXPECT_EQ(value("PULSE_TX_LOG_DIR"), "/srv/txlogs");
  EXPECT_EQ(value("PULSE_TX_LOG_SYNC"), "none");
  EXPECT_EQ(value("PULSE_TX_LOG_COMPACT_BYTES"), std::to_string(8 << 20));
  EXPECT_EQ(value("PULSE_TX_LOG_KEEP_RECORDS"), "100");
  EXPECT_EQ(value("PULSE_TX_MAX_CHAIN"), "2");
  EXPECT_EQ(value("PULSE_TX_REPLICA_PATH"), "am");
  // Defaults: group commit, the nodes' own log directory.
  auto d = ParseClusterConfig("[tx]\n[[memnode]]\n[[memnode]]\n[[memnode]]\n", "t");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->tx->sync, "fdatasync");
  EXPECT_EQ(d->tx->chain_length, 3u);
  env = TxEnvironment(*d->tx);
  EXPECT_EQ(value("PULSE_TX_LOG_DIR"), "<unset>");
  EXPECT_EQ(value("PULSE_TX_REPLICA_PATH"), "auto");
}

TEST_F(ClusterConfigTest, TxErrorsNameTheField) {
  EXPECT_NE(ErrorOf("[tx]\nsync = \"msync\"\n[[memnode]]\n[[memnode]]\n[[memnode]]\n")
                .find("cluster config: tx.sync: 'msync' is not fdatasync or none"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[tx]\nchain_length = 4\n[[memnode]]\n[[memnode]]\n").find("tx.chain_length: 4 is not in [1, 2]"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[tx]\nchain_length = 17\n[[memnode]]\n").find("tx.chain_length: 17 is out of range"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[tx]\nlog_dir = 5\n[[memnode]]\n").find("tx.log_dir: expected a string"), std::string::npos);
  EXPECT_NE(ErrorOf("[tx]\nkeep_records = 0\n[[memnode]]\n").find("tx.keep_records: 0 is out of range"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[tx]\nreplica_path = \"rdma\"\n[[memnode]]\n[[memnode]]\n[[memnode]]\n")
                .find("cluster config: tx.replica_path: 'rdma' is not auto or am"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[tx]\nlength = 3\n[[memnode]]\n").find("tx.length: unknown key"), std::string::npos);
  EXPECT_NE(ErrorOf("tx = 3\n[[memnode]]\n").find("tx: expected a table"), std::string::npos);
}

TEST_F(ClusterConfigTest, SyntaxErrorsNameTheLine) {
  EXPECT_NE(ErrorOf("[cluster]\nname = \n").find("test.toml:2:"), std::string::npos);
}

TEST_F(ClusterConfigTest, MissingFileIsNotFound) {
  auto c = LoadClusterConfig("/nonexistent/cluster.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kNotFound);
}

TEST_F(ClusterConfigTest, RacksConfigHasTwoRacksOverTcp) {
  auto c = LoadClusterConfig(std::string(PULSE_SOURCE_DIR) + "/config/racks.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->Racked());
  EXPECT_EQ(c->ucx_tls, "tcp");
  ASSERT_EQ(c->memnodes.size(), 2u);
  EXPECT_EQ(c->memnodes[0].rack, "a");
  EXPECT_EQ(c->memnodes[1].rack, "b");
  EXPECT_EQ(c->memnodes[0].rack_tenants, std::vector<uint32_t>{1});
  auto local = ParseClusterConfig(EmbeddedLocalConfig(), "embedded");
  ASSERT_TRUE(local.ok());
  EXPECT_FALSE(local->Racked());
}

TEST_F(ClusterConfigTest, RackErrorsNameTheKey) {
  const std::string tcp = "[transport]\nucx_tls = \"tcp\"\n";
  EXPECT_NE(ErrorOf(tcp + "[[memnode]]\nrack_tenants = [1]\n").find("memnode[0].rack_tenants: needs rack"),
            std::string::npos);
  EXPECT_NE(ErrorOf(tcp + "[[memnode]]\nrack = \"a\"\nrack_tenants = [0]\n").find("memnode[0].rack_tenants"),
            std::string::npos);
  EXPECT_NE(ErrorOf(tcp + "[[memnode]]\nrack = \"a\"\nrack_tenants = \"1\"\n").find("expected an array"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[memnode]]\nrack = \"a\"\n").find("transport.ucx_tls: a cluster with racks"),
            std::string::npos);
  for (const char* shared : {"posix", "tcp,sysv", "tcp,cma", "sm", "all", "^tcp"}) {
    const std::string text = fmt::format("[transport]\nucx_tls = \"{}\"\n[[memnode]]\nrack = \"a\"\n", shared);
    EXPECT_NE(ErrorOf(text).find("no shared-memory transport"), std::string::npos) << shared;
  }
  auto ok = ParseClusterConfig("[transport]\nucx_tls = \"rc,tcp\"\n[[memnode]]\nrack = \"a\"\n", "t");
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

}  // namespace
}  // namespace pulse::cluster
