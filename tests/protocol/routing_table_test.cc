// The routing table of the direct data path: lookups against a plain scan,
// versioning (every change, and only a change, bumps it), adoption of
// pushes (never an older one), and the JSON encoding the switch pushes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "protocol/routing_table.h"

namespace pulse {
namespace {

RouteEntry Entry(NodeId node, uint64_t base, uint64_t size, bool alive = true) {
  return RouteEntry{node, "127.0.0.1:" + std::to_string(7200 + node), base, size, alive};
}

TEST(RoutingTable, OwnerMatchesAPlainScan) {
  RoutingTable t;
  std::vector<RouteEntry> plain;
  std::mt19937_64 rng(3);
  uint64_t at = 1 << 20;
  for (NodeId n = 0; n < 16; ++n) {
    at += rng() % 4096;
    RouteEntry e = Entry(n, at, 1 + rng() % (1 << 16), n % 3 != 0);
    ASSERT_TRUE(t.Put(e).ok());
    plain.push_back(e);
    at += e.size;
  }
  for (int i = 0; i < 5000; ++i) {
    const uint64_t a = rng() % (at + 1000);
    const RouteEntry* want = nullptr;
    for (const RouteEntry& e : plain)
      if (a >= e.base && a < e.base + e.size) want = &e;
    const RouteEntry* got = t.OwnerOf(a);
    ASSERT_EQ(got == nullptr, want == nullptr) << a;
    if (got != nullptr) EXPECT_EQ(*got, *want);
  }
  EXPECT_EQ(t.Find(5)->node, 5u);
  EXPECT_EQ(t.Find(99), nullptr);
}

TEST(RoutingTable, EveryChangeAndOnlyAChangeBumpsTheVersion) {
  RoutingTable t;
  EXPECT_EQ(t.version(), 0u);
  ASSERT_TRUE(t.Put(Entry(1, 0x1000, 0x1000)).ok());
  ASSERT_TRUE(t.Put(Entry(2, 0x2000, 0x1000)).ok());
  EXPECT_EQ(t.version(), 2u);
  ASSERT_TRUE(t.Put(Entry(2, 0x2000, 0x1000)).ok());  // the same again
  EXPECT_EQ(t.version(), 2u);
  t.SetAlive(2, false);  // died
  EXPECT_EQ(t.version(), 3u);
  t.SetAlive(2, false);
  EXPECT_EQ(t.version(), 3u);
  RouteEntry restarted = Entry(2, 0x2000, 0x1000);
  restarted.address = "127.0.0.1:9999";  // back on another port
  ASSERT_TRUE(t.Put(restarted).ok());
  EXPECT_EQ(t.version(), 4u);
  EXPECT_EQ(t.Find(2)->address, "127.0.0.1:9999");
  EXPECT_TRUE(t.Find(2)->alive);
  // Overlaps and empty ranges are refused and change nothing.
  EXPECT_EQ(t.Put(Entry(3, 0x1800, 0x100)).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t.Put(Entry(3, 0x5000, 0)).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t.version(), 4u);
  EXPECT_EQ(t.entries().size(), 2u);
}

TEST(RoutingTable, AdoptsOnlyNewerTables) {
  RoutingTable switch_table;
  ASSERT_TRUE(switch_table.Put(Entry(1, 0x1000, 0x1000)).ok());
  const RoutingTable v1 = switch_table;
  ASSERT_TRUE(switch_table.Put(Entry(2, 0x2000, 0x1000)).ok());
  const RoutingTable v2 = switch_table;

  RoutingTable copy;
  EXPECT_TRUE(copy.Adopt(v2));
  EXPECT_FALSE(copy.Adopt(v1));  // a late push of an older table
  EXPECT_FALSE(copy.Adopt(v2));
  EXPECT_EQ(copy.version(), v2.version());
  EXPECT_NE(copy.OwnerOf(0x2800), nullptr);
}

TEST(RoutingTable, JsonRoundTripsAndNamesTheBadField) {
  RoutingTable t;
  ASSERT_TRUE(t.Put(Entry(4, 0x4000, 0x1000)).ok());
  ASSERT_TRUE(t.Put(Entry(1, 0x1000, 0x1000, false)).ok());
  auto back = RoutingTable::FromJson(t.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->version(), t.version());
  EXPECT_EQ(back->entries(), t.entries());
  EXPECT_EQ(back->entries().front().node, 1u);  // kept by node id

  struct Case {
    const char* json;
    const char* fragment;
  };
  for (const Case& c : {
           Case{R"([])", "not an object"},
           Case{R"({"nodes":[]})", "version"},
           Case{R"({"version":-1,"nodes":[]})", "version"},
           Case{R"({"version":1})", "nodes"},
           Case{R"({"version":1,"nodes":[{"node":1,"base":0,"size":1,"alive":true}]})", "address"},
           Case{R"({"version":1,"nodes":[{"node":1,"address":"a","base":0,"size":1}]})", "alive"},
           Case{R"({"version":1,"nodes":[{"node":1,"address":"a","base":0,"size":0,"alive":true}]})", "bad range"},
           Case{R"({"version":1,"nodes":[{"node":1,"address":"a","base":0,"size":9,"alive":true},
                                         {"node":1,"address":"b","base":99,"size":9,"alive":true}]})", "twice"},
           Case{R"({"version":1,"nodes":[{"node":1,"address":"a","base":0,"size":9,"alive":true},
                                         {"node":2,"address":"b","base":4,"size":9,"alive":true}]})", "overlaps"},
       }) {
    auto r = RoutingTable::FromJson(nlohmann::json::parse(c.json));
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.fragment), std::string::npos) << r.status().message();
  }
}

TEST(RoutingTable, RouteNextMovesContinuationsAndClearsTheRedirectFlag) {
  RoutingTable t;
  ASSERT_TRUE(t.Put(Entry(1, 0x1000, 0x1000)).ok());
  ASSERT_TRUE(t.Put(Entry(2, 0x2000, 0x1000)).ok());
  auto owner = [&](uint64_t a) -> std::optional<NodeId> {
    const RouteEntry* e = t.OwnerOf(a);
    return e ? std::optional<NodeId>(e->node) : std::nullopt;
  };
  // A redirect (a node that did not own cur_ptr returned it unrun) is routed
  // on as a request to the owner, without the flag.
  TraversalMessage m;
  m.kind = MessageKind::kResponse;
  m.status = TraversalStatus::kNotLocal;
  m.flags = kFlagRedirect | kFlagHasStore;
  m.cpu_node = 5;
  m.cur_ptr = 0x1010;
  RouteDecision d = RouteNext(owner, &m);
  EXPECT_EQ(d.to, RouteDecision::To::kMemoryNode);
  EXPECT_EQ(d.node, 1u);
  EXPECT_EQ(m.kind, MessageKind::kRequest);
  EXPECT_EQ(m.flags, kFlagHasStore);
  // No owner: an invalid-pointer answer to the CPU node.
  bool unroutable = false;
  m.cur_ptr = 0x9000;
  d = RouteNext(owner, &m, &unroutable);
  EXPECT_TRUE(unroutable);
  EXPECT_EQ(d.to, RouteDecision::To::kCpuNode);
  EXPECT_EQ(d.node, 5u);
  EXPECT_EQ(m.status, TraversalStatus::kFaultInvalidPointer);
}

TEST(RoutingMode, ParsesNamesAndTheEnvironment) {
  EXPECT_EQ(*ParseRoutingMode("direct", "x"), RoutingMode::kDirect);
  EXPECT_EQ(*ParseRoutingMode("switch", "x"), RoutingMode::kSwitch);
  auto bad = ParseRoutingMode("rack", "--routing");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--routing"), std::string::npos);
  EXPECT_EQ(RoutingModeName(RoutingMode::kSwitch), "switch");
  const char* saved = std::getenv(kRoutingEnvironmentVariable);
  const std::string keep = saved ? saved : "";
  ::setenv(kRoutingEnvironmentVariable, "switch", 1);
  EXPECT_EQ(*DefaultRoutingMode(), RoutingMode::kSwitch);
  ::setenv(kRoutingEnvironmentVariable, "nonsense", 1);
  EXPECT_FALSE(DefaultRoutingMode().ok());
  ::unsetenv(kRoutingEnvironmentVariable);
  EXPECT_EQ(*DefaultRoutingMode(), RoutingMode::kDirect);
  if (saved) ::setenv(kRoutingEnvironmentVariable, keep.c_str(), 1);
}

}  // namespace
}  // namespace pulse
