// Connections::LiveEndpoint: a memory node's endpoint is handed out only
// while its connection stands and the switch's latest routing table does
// not list it down, so that a layer above the client (transactions, RPC,
// the memory agent) stops sending to a node the switch saw die even when
// this connection has not noticed yet.
#include "client/connections.h"

#include <gtest/gtest.h>

#include <string>

namespace pulse {
namespace {

// The bytes of a routing table push listing nodes 0 and 1, node 0 `alive0`.
std::string Push(uint32_t version, bool alive0) {
  nlohmann::json nodes = nlohmann::json::array();
  nodes.push_back({{"node", 0}, {"address", "127.0.0.1:1"}, {"base", 1ull << 40}, {"size", 1 << 20}, {"alive", alive0}});
  nodes.push_back({{"node", 1}, {"address", "127.0.0.1:2"}, {"base", 2ull << 40}, {"size", 1 << 20}, {"alive", true}});
  return nlohmann::json{{"version", version}, {"nodes", nodes}}.dump();
}

void Adopt(Connections* c, const std::string& push) {
  c->AdoptPushedTable(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(push.data()), push.size()));
}

class ConnectionsTest : public ::testing::Test {
 protected:
  ConnectionsTest() : connections_(options_, counters_) {
    for (uint32_t id : {0u, 1u}) {
      MemNode n;
      n.id = id;
      n.address = "127.0.0.1:" + std::to_string(id + 1);
      n.base = uint64_t{id + 1} << 40;
      n.size = 1 << 20;
      n.ep = 5 + id;
      connections_.nodes.push_back(n);
    }
  }
  ClientOptions options_;
  ClientCounters counters_;
  Connections connections_;
};

TEST_F(ConnectionsTest, AConnectedNodeWithoutATableIsLive) {
  EXPECT_EQ(connections_.LiveEndpoint(0), 5u);
  EXPECT_EQ(connections_.LiveEndpoint(1), 6u);
  EXPECT_EQ(connections_.LiveEndpoint(7), net::kInvalidEndpoint) << "a node the client does not know";
}

TEST_F(ConnectionsTest, ANodeTheSwitchListsDownIsNotLiveUntilListedUpAgain) {
  Adopt(&connections_, Push(2, /*alive0=*/true));
  EXPECT_EQ(connections_.LiveEndpoint(0), 5u);
  Adopt(&connections_, Push(3, /*alive0=*/false));
  EXPECT_EQ(connections_.LiveEndpoint(0), net::kInvalidEndpoint);
  EXPECT_EQ(connections_.LiveEndpoint(1), 6u) << "only the node listed down";
  // An older push arriving late changes nothing.
  Adopt(&connections_, Push(2, /*alive0=*/true));
  EXPECT_EQ(connections_.LiveEndpoint(0), net::kInvalidEndpoint);
  Adopt(&connections_, Push(4, /*alive0=*/true));
  EXPECT_EQ(connections_.LiveEndpoint(0), 5u);
}

TEST_F(ConnectionsTest, ALostConnectionIsNotLive) {
  EXPECT_FALSE(connections_.OnDisconnect(5)) << "not the switch";
  EXPECT_EQ(connections_.LiveEndpoint(0), net::kInvalidEndpoint);
  EXPECT_EQ(connections_.LiveEndpoint(1), 6u);
}

}  // namespace
}  // namespace pulse
