// The page directory in the control plane (docs/tier.md), against real
// processes: a switch, memory node 0 as rack "a", node 1 as rack "b" and
// node 2 without a rack.  The switch builds the directory from the racked
// registrations (each home page in the frame of its index) and sends it
// inside the routing table it pushes; every memory node adopts it, racked or
// not.  A racked node killed and restarted comes back into the same frames
// (the directory does not change).  A racked pool smaller than one page is
// refused by name.
#include <gtest/gtest.h>

#include <signal.h>

#include "support/cpu_node.h"
#include "support/local_rack.h"

namespace pulse {
namespace {

using testing::LocalRack;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr uint64_t kPageBytes = 1 << 20;

std::vector<std::string> Rack(const char* rack) { return {"--rack", rack, "--rack-tenants", "1"}; }

// Waits until memory node `node` reports the directory version `version`.
bool WaitForTierVersion(LocalRack& rack, uint32_t node, uint64_t version) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  json s;
  while (std::chrono::steady_clock::now() < deadline) {
    s = rack.MemNodeStats(node)["counters"];
    if (s.value("tier_version", uint64_t{0}) == version) return true;
    rack.cpu().Pump(10ms);
  }
  ADD_FAILURE() << "memory node " << node << " stats: " << s.dump();
  return false;
}

class DirectoryCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SetUcxTestEnvironment();
    setenv("UCX_TLS", "tcp", 1);
    ASSERT_TRUE(rack_.StartSwitch({"--page-bytes", std::to_string(kPageBytes)}));
  }
  void TearDown() override { unsetenv("UCX_TLS"); }
  json Tier() { return rack_.SwitchStats()["counters"]["tier"]; }
  LocalRack rack_;
};

TEST_F(DirectoryCluster, TheSwitchPushesTheDirectoryOfTheRackedNodesToEveryMemoryNode) {
  rack_.StartMemNode(0, /*pool_mib=*/16, Rack("a"));
  rack_.StartMemNode(1, /*pool_mib=*/8, Rack("b"));
  rack_.StartMemNode(2, /*pool_mib=*/8);
  ASSERT_TRUE(rack_.Join(3));
  const json tier = Tier();
  EXPECT_EQ(tier["page_bytes"], kPageBytes);
  EXPECT_EQ(tier["pages"], 16u + 8u) << tier.dump();  // node 2 has no rack: no pages
  EXPECT_EQ(tier["moved"], 0u);
  ASSERT_TRUE(tier["racks"].contains("a") && tier["racks"].contains("b")) << tier.dump();
  EXPECT_NE(tier["racks"]["a"], tier["racks"]["b"]);
  const uint64_t version = tier["version"].get<uint64_t>();
  EXPECT_GT(version, 0u);
  for (uint32_t node = 0; node < 3; ++node) EXPECT_TRUE(WaitForTierVersion(rack_, node, version));

  // Killed and restarted, node 0 registers into its own frames again: the
  // directory stays as it was, and the new process adopts it.
  rack_.memnode(0).Signal(SIGKILL);
  ASSERT_NE(rack_.memnode(0).Wait(10s), -1);
  rack_.StartMemNode(0, /*pool_mib=*/16, Rack("a"));
  ASSERT_TRUE(rack_.Join(3));
  EXPECT_EQ(Tier()["version"], version);
  EXPECT_EQ(Tier()["pages"], 24u);
  EXPECT_TRUE(WaitForTierVersion(rack_, 0, version));
}

TEST_F(DirectoryCluster, WithoutRacksThereIsNoDirectory) {
  rack_.StartMemNode(0, /*pool_mib=*/8);
  ASSERT_TRUE(rack_.Join(1));
  EXPECT_EQ(Tier()["version"], 0u);
  EXPECT_EQ(Tier()["pages"], 0u);
  EXPECT_EQ(rack_.MemNodeStats(0)["counters"]["tier_version"], 0u);
}

TEST(DirectoryClusterRefusal, ARackedPoolSmallerThanAPageIsRefusedByName) {
  testing::SetUcxTestEnvironment();
  LocalRack rack;
  ASSERT_TRUE(rack.StartSwitch({"--page-bytes", std::to_string(uint64_t{1} << 30)}));
  rack.StartMemNode(0, /*pool_mib=*/8, Rack("a"));
  EXPECT_TRUE(rack.memnode(0).WaitForLog("holds no page of 1073741824 bytes", 20000ms));
  EXPECT_NE(rack.memnode(0).Wait(20s), -1);  // it does not start
}

}  // namespace
}  // namespace pulse
