// A data structure on a 2-rack cluster (docs/racks.md), reduced scale:
// UnorderedMap used by a CPU node of rack "a" whose objects spread over both
// racks, against std::unordered_map; every find offloaded, at the CPU node
// and as the dispatch engine decides; without and with the CPU-node cache
// (whose windows and the rack pool's both make up a traversal's local
// prefix).  The rack tier must serve part of the work by loads and stores
// and change no answer.
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "pulse/client.h"
#include "pulse/ds/unordered_map.h"
#include "support/cpu_node.h"
#include "support/local_rack.h"

namespace pulse {
namespace {

using namespace std::chrono_literals;

class RackDs : public ::testing::TestWithParam<bool> {};  // with a CPU-node cache?

TEST_P(RackDs, UnorderedMapOnTwoRacksMatchesStdUnorderedMap) {
  testing::SetUcxTestEnvironment();
  setenv("UCX_TLS", "tcp", 1);
  testing::LocalRack rack;
  ASSERT_TRUE(rack.StartSwitch());
  rack.StartMemNode(0, /*pool_mib=*/16, {"--rack", "a", "--rack-tenants", "1"});
  rack.StartMemNode(1, /*pool_mib=*/16, {"--rack", "b", "--rack-tenants", "1"});
  ASSERT_TRUE(rack.Join(2));
  ClientOptions o;
  o.switch_address = rack.switch_address();
  o.slab_bytes = 4096;  // objects of both racks in every chain
  o.request_timeout = 1000ms;
  o.rack = "a";
  if (GetParam()) o.cache.bytes = 64 << 10;
  auto client = Client::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ds::UnorderedMapOptions options;
  options.buckets = 97;
  auto created = ds::UnorderedMap::Create(client->get(), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ds::UnorderedMap& map = **created;
  std::unordered_map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(16);
  constexpr ExecutionMode kModes[] = {ExecutionMode::kOffload, ExecutionMode::kCpuNode, ExecutionMode::kAuto};
  for (int op = 0; op < 3000; ++op) {
    const uint64_t key = rng() % 400, value = rng();
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 4) {
      auto r = map.Insert(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.emplace(key, value).second) << "insert " << key;
    } else if (kind < 5) {
      auto r = map.InsertOrAssign(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.insert_or_assign(key, value).second) << "insert_or_assign " << key;
    } else if (kind < 6) {
      auto r = map.Erase(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.erase(key) == 1) << "erase " << key;
    } else {
      auto it = native.find(key);
      for (ExecutionMode mode : kModes) {
        map.set_mode(mode);
        auto r = map.Find(key);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(r->has_value(), it != native.end()) << "find " << key;
        if (it != native.end()) EXPECT_EQ(**r, it->second) << "find " << key;
      }
    }
    ASSERT_EQ(map.size(), native.size());
  }
  const ClientCounters& c = (*client)->counters();
  EXPECT_GT(c.rack_reads, 0u);
  EXPECT_GT(c.rack_writes, 0u);
  EXPECT_GT(c.rack_prefix_iterations, 0u);
  EXPECT_GT(c.remote_reads, 0u) << "rack b's objects are read remotely";
  if (GetParam()) {
    EXPECT_GT(c.cache_hits, 0u) << "rack b's objects are cached";
  } else {
    EXPECT_GT(c.offloaded, 0u) << "traversals leave rack a";
  }
  unsetenv("UCX_TLS");
}

INSTANTIATE_TEST_SUITE_P(CacheOffOn, RackDs, ::testing::Bool());

}  // namespace
}  // namespace pulse
