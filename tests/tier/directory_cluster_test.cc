// The page directory in the control plane (docs/tier.md), against real
// processes: a switch, memory node 0 as rack "a", node 1 as rack "b" and
// node 2 without a rack.  The switch builds the directory from the racked
// registrations (each home page in the frame of its index) and sends it
// inside the routing table it pushes; every memory node adopts it, racked or
// not.  A racked node killed and restarted comes back into the same frames
// (the directory does not change).  A racked pool smaller than one page is
// refused by name.  CPU nodes count their accesses to pages of another rack
// and ask the switch for a page on the access that makes it hot (the 5th
// back to back with the defaults, the 2nd with H_p = 1); a second request
// for a queued page is dropped.
#include <gtest/gtest.h>

#include <signal.h>

#include "pulse/client.h"
#include "support/cpu_node.h"
#include "support/local_rack.h"
#include "tier/racked_cluster.h"

namespace pulse {
namespace {

using testing::LocalRack;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr uint64_t kPageBytes = 1 << 20;

using testing::RackFlags;
using testing::WaitForTierVersion;

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
  rack_.StartMemNode(0, /*pool_mib=*/16, RackFlags("a"));
  rack_.StartMemNode(1, /*pool_mib=*/8, RackFlags("b"));
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
  rack_.StartMemNode(0, /*pool_mib=*/16, RackFlags("a"));
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

class HotPages : public DirectoryCluster {
 protected:
  void SetUp() override {
    DirectoryCluster::SetUp();
    rack_.StartMemNode(0, /*pool_mib=*/16, RackFlags("a"));
    rack_.StartMemNode(1, /*pool_mib=*/16, RackFlags("b"));
    ASSERT_TRUE(rack_.Join(2));
  }
  std::unique_ptr<Client> Connect(const std::string& rack, double hot_threshold = 4) {
    return testing::ConnectToRack(rack_, rack, hot_threshold);
  }
  json Swaps() { return rack_.SwitchStats()["counters"]["swaps"]; }
};

TEST_F(HotPages, APageOfAnotherRackIsRequestedOnTheAccessThatMakesItHotAndOnlyOnce) {
  std::unique_ptr<Client> a = Connect("a");
  ASSERT_NE(a, nullptr);
  auto far = a->Allocate(64, 1);  // rack "b"
  auto near = a->Allocate(64, 0);  // its own rack
  ASSERT_TRUE(far.ok() && near.ok());
  uint64_t v = 0;
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(a->Read(*far, &v, 8).ok());
  EXPECT_EQ(a->counters().remote_page_accesses, 4u);
  EXPECT_EQ(a->counters().swap_requests, 0u);
  EXPECT_EQ(Swaps()["requests"], 0u);
  ASSERT_TRUE(a->Write(*far, &v, 8).ok());  // the 5th access
  EXPECT_EQ(a->counters().swap_requests, 1u);
  EXPECT_EQ(Swaps()["requests"], 1u);
  EXPECT_EQ(Swaps()["queued"], 1u);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(a->Read(*far, &v, 8).ok());
  EXPECT_EQ(a->counters().swap_requests, 1u);  // one request per page
  // Its own rack's page is not counted, however often it is used.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(a->Read(*near, &v, 8).ok());
  EXPECT_EQ(a->counters().remote_page_accesses, 15u);
  EXPECT_EQ(a->counters().swap_request_errors, 0u);

  // Another CPU node of rack "a" finds the same page hot: its request is a
  // duplicate of the queued one.
  std::unique_ptr<Client> a2 = Connect("a");
  ASSERT_NE(a2, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(a2->Read(*far, &v, 8).ok());
  EXPECT_EQ(a2->counters().swap_requests, 1u);
  EXPECT_EQ(a2->counters().swap_requests_dropped, 1u);
  EXPECT_EQ(Swaps()["duplicates"], 1u);
  EXPECT_EQ(Swaps()["queued"], 1u);

  // A CPU node without a rack counts nothing.
  std::unique_ptr<Client> none = Connect("");
  ASSERT_NE(none, nullptr);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(none->Read(*far, &v, 8).ok());
  EXPECT_EQ(none->counters().remote_page_accesses, 0u);
  EXPECT_EQ(none->counters().swap_requests, 0u);
}

TEST_F(HotPages, TheThresholdIsAKnob) {
  std::unique_ptr<Client> a = Connect("a", /*hot_threshold=*/1);
  ASSERT_NE(a, nullptr);
  auto far = a->Allocate(64, 1);
  ASSERT_TRUE(far.ok());
  uint64_t v = 0;
  ASSERT_TRUE(a->Read(*far, &v, 8).ok());
  EXPECT_EQ(a->counters().swap_requests, 0u);
  ASSERT_TRUE(a->Read(*far, &v, 8).ok());  // hotness 2 > 1
  EXPECT_EQ(a->counters().swap_requests, 1u);
  // Invalid thresholds are refused at Connect.
  ClientOptions bad;
  bad.switch_address = rack_.switch_address();
  bad.hotness.lifetime_s = 0;
  EXPECT_EQ(Client::Connect(bad).status().code(), Status::Code::kInvalidArgument);
}

TEST_F(HotPages, TheSwitchRefusesABadRequestByName) {
  auto call = [&](json body) {
    body["op"] = "swap_request";
    return rack_.cpu().Call(rack_.switch_ep(), body);
  };
  const uint64_t page = (uint64_t{1} << 40) / kPageBytes;  // node 0's first page
  json ok = call({{"page", page}, {"rack", "b"}, {"hotness", 5.0}, {"reads", 5u}, {"writes", 0u}});
  EXPECT_TRUE(ok.value("ok", false)) << ok.dump();
  json unknown_rack = call({{"page", page}, {"rack", "z"}, {"hotness", 5.0}, {"reads", 5u}, {"writes", 0u}});
  EXPECT_FALSE(unknown_rack.value("ok", true));
  EXPECT_NE(unknown_rack.dump().find("no rack 'z'"), std::string::npos) << unknown_rack.dump();
  json no_page = call({{"page", 7u}, {"rack", "b"}, {"hotness", 5.0}, {"reads", 5u}, {"writes", 0u}});
  EXPECT_NE(no_page.dump().find("page 7 is not in the page directory"), std::string::npos) << no_page.dump();
  json no_heat = call({{"page", page}, {"rack", "b"}});
  EXPECT_NE(no_heat.dump().find("hotness"), std::string::npos) << no_heat.dump();
  EXPECT_EQ(Swaps()["requests"], 1u);
}

TEST(DirectoryClusterRefusal, ARackedPoolSmallerThanAPageIsRefusedByName) {
  testing::SetUcxTestEnvironment();
  LocalRack rack;
  ASSERT_TRUE(rack.StartSwitch({"--page-bytes", std::to_string(uint64_t{1} << 30)}));
  rack.StartMemNode(0, /*pool_mib=*/8, RackFlags("a"));
  EXPECT_TRUE(rack.memnode(0).WaitForLog("holds no page of 1073741824 bytes", 20000ms));
  EXPECT_NE(rack.memnode(0).Wait(20s), -1);  // it does not start
}

}  // namespace
}  // namespace pulse
