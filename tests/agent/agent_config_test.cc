// The [agent] table of a cluster config: read into ClusterConfig::agent
// (role, address, flags), absent by default, checked like the other nodes.
#include <gtest/gtest.h>

#include "cluster/config.h"

namespace pulse::cluster {
namespace {

constexpr const char* kBase = R"(
[switch]
port = 7100
[[memnode]]
port = 7101
)";

TEST(AgentConfig, TheAgentTableIsReadAndChecked) {
  auto none = ParseClusterConfig(kBase, "test");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->agent.has_value());

  auto c = ParseClusterConfig(std::string(kBase) + "[agent]\nport = 7300\nflags = \"--mode proxy --cpus 1\"\n", "test");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->agent.has_value());
  EXPECT_EQ(c->agent->role, Role::kAgent);
  EXPECT_EQ(c->agent->port, 7300);
  EXPECT_EQ(c->agent->agent_flags, "--mode proxy --cpus 1");
  EXPECT_EQ(c->agent->Name(), "agent");
  EXPECT_EQ(RoleName(Role::kAgent), "agent");

  auto clash = ParseClusterConfig(std::string(kBase) + "[agent]\nport = 7101\n", "test");
  EXPECT_EQ(clash.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(clash.status().message().find("agent.port"), std::string::npos) << clash.status().message();
  auto unknown = ParseClusterConfig(std::string(kBase) + "[agent]\nmode = \"proxy\"\n", "test");
  EXPECT_NE(unknown.status().message().find("agent.mode"), std::string::npos) << unknown.status().message();
}

}  // namespace
}  // namespace pulse::cluster
